/** The senders that read an HTTP answer for whether to try again. */
export type AnswerPath = 'exchange' | 'calls';

/**
 * The one rule: answers that say the platform did not take the request now and may take it soon, so every sender
 * tries again later: 408 (it gave up waiting for the request), 429 (rate limited), 502, 503, 504 (a gateway or the
 * service is down for the moment).
 */
const TRANSIENT: ReadonlySet<number> = new Set([408, 429, 502, 503, 504]);

interface Departure {
  /** Statuses this path also tries again. */
  readonly also: (status: number) => boolean;
  /** Statuses of the rule this path does not try again. */
  readonly except: ReadonlySet<number>;
}

const isServerError = (status: number): boolean => status >= 500;

/** Where a path departs from the rule, and why. Nothing else in the core decides a status. */
const DEPARTURES: Readonly<Record<AnswerPath, Departure>> = {
  // An exchange only yields a token: a re-send acts on nothing twice, so any server error is worth another attempt.
  exchange: { also: isServerError, except: new Set() },
  // A call to the APIs may have been acted on when the service failed (500, 501), so only the rule's answers are
  // re-sent. 408 is not: the retry observer names no reason for it (`RetryReason`), and adding one is a public change.
  calls: { also: () => false, except: new Set([408]) },
};

/** Whether `path` tries again after an answer with `status`; `false` is a refusal (or, for 2xx, no failure). */
export function isTransientAnswer(status: number, path: AnswerPath): boolean {
  const departure = DEPARTURES[path];
  return (TRANSIENT.has(status) && !departure.except.has(status)) || departure.also(status);
}
