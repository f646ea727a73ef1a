import { TokenExchangeError } from '../platform-auth.errors.js';
import type { AttemptFailure } from './token-exchange.client.js';
import { MAX_RETRY_AFTER_BACKOFF_MS } from './token.cache.js';

const INVALID_CERTIFICATE =
  'Invalid certificate: the assertion did not verify against the registered certificate; check that the configured key and certificate are the registered pair.';

/**
 * What an error_description may name, most specific first (a description naming a bad signature also names the
 * certificate and iss it was checked against); the first that matches wins.
 */
const DESCRIPTION_HINTS: ReadonlyArray<[RegExp, string]> = [
  [
    /\baud(ience)?\b/i,
    'Wrong audience: aud must be the platform domain the platform expects; set audience (PLATFORM_AUDIENCE) if it differs from the baseUrl host.',
  ],
  [/\bsignature\b/i, INVALID_CERTIFICATE],
  [
    /\bmachine ?id\b|\bsub\b/i,
    'Wrong machineId: sub must be the machineId of the system integration the certificate is registered on.',
  ],
  [
    /\bthumbprint\b|\biss\b/i,
    'Unregistered certificate: the platform knows no certificate with this thumbprint (iss); register the configured certificate on the system integration in the portal, or, when thumbprint (PLATFORM_CERT_THUMBPRINT) is set, check it against the one the portal shows.',
  ],
  [/\bcertificate\b/i, INVALID_CERTIFICATE],
  [
    /\b(not active|inactive|status|disabled)\b/i,
    'The system integration is not Active: only Active integrations can authenticate; check its status in the portal.',
  ],
  [
    /\b(expired|nbf|not before|not yet valid|iat|exp)\b/i,
    'The assertion was outside its validity window: check the local system time against the platform (clock skew) and assertionLifetimeSeconds.',
  ],
  [/\b(replay|jti|already used)\b/i, 'The assertion id (jti) was already used: each exchange needs a fresh assertion.'],
];

/** A `Map`, not an object: the key comes from the network, and `constructor` or `__proto__` must find nothing. */
const ERROR_HINTS = new Map<string, string>(
  Object.entries({
    invalid_client:
      'The platform did not accept the client: check that the certificate is registered on the system integration, that the thumbprint (iss) and machineId (sub) are those shown in the portal, and that the integration is Active.',
    invalid_grant:
      'The platform refused the assertion: check the audience (aud), the local clock (an expired or not-yet-valid JWT), and the claims.',
    invalid_request:
      'The platform found the request malformed: check the token endpoint URL (baseUrl, exchange.path) and exchange.encoding.',
    unauthorized_client: 'The system integration may not authenticate: check that it is Active in the portal.',
    unsupported_grant_type:
      'The endpoint does not support the clientcertificate grant: check the token endpoint URL (baseUrl, exchange.path).',
    invalid_scope: "The platform refused the requested scope: check the integration's permissions in the portal.",
    access_denied: "The platform denied access: check the integration's status and permissions in the portal.",
    server_error: 'The platform failed while issuing the token; retry later.',
    temporarily_unavailable: 'The platform is temporarily unavailable; retry later.',
  }),
);

export function describeClockSkew(offsetSeconds: number): string {
  const direction = offsetSeconds > 0 ? 'ahead of' : 'behind';
  return `The platform's clock is ${Math.abs(offsetSeconds)} s ${direction} the local clock (platform Date header), more than the clock margin tolerates; synchronise the system time (NTP), or set correctClockSkew: true (PLATFORM_CORRECT_CLOCK_SKEW) or a larger clockMarginSeconds (PLATFORM_CLOCK_MARGIN_SECONDS).`;
}

/**
 * Whether the platform's clock is further off than the assertion's clock margin tolerates, the one rule the
 * exchange's hints and `doctor` share.
 */
export function isSkewed(offsetSeconds: number | undefined, toleranceSeconds: number): offsetSeconds is number {
  return offsetSeconds !== undefined && Math.abs(offsetSeconds) > toleranceSeconds;
}

/** The likely cause of a refused exchange, in the terms of docs/platform-contract.md#failure-causes. */
function hintForRejection(
  status: number,
  oauthError: string | undefined,
  description: string | undefined,
  clockOffsetSeconds: number | undefined,
  clockToleranceSeconds: number,
): string {
  const parts: string[] = [];
  if (isSkewed(clockOffsetSeconds, clockToleranceSeconds)) parts.push(describeClockSkew(clockOffsetSeconds));
  const fromDescription = description
    ? DESCRIPTION_HINTS.find(([pattern]) => pattern.test(description))?.[1]
    : undefined;
  if (fromDescription) parts.push(fromDescription);
  else if (oauthError !== undefined && ERROR_HINTS.has(oauthError)) parts.push(ERROR_HINTS.get(oauthError)!);
  else if (status === 404) parts.push('The token endpoint was not found: check baseUrl and exchange.path.');
  else if (status === 401 || status === 403) parts.push(ERROR_HINTS.get('invalid_client')!);
  else
    parts.push(
      `The token endpoint answered HTTP ${status}: check baseUrl and exchange.path point at the platform's token endpoint.`,
    );
  return parts.join(' ');
}

/** Whole seconds, as errors and hints state an offset; `|| 0` keeps a -0 from rounding -0.4 s out of messages. */
export function offsetSeconds(offsetMs: number | undefined): number | undefined {
  return offsetMs === undefined ? undefined : Math.round(offsetMs / 1000) || 0;
}

/** What the hints need to know of the configuration: the host to name and the clock margin as tolerance. */
export interface HintContext {
  readonly host: string;
  readonly clockToleranceSeconds: number;
}

/** The error an exchange ends with after `attempts` attempts, the last of which failed as `outcome` says. */
export function exchangeError(outcome: AttemptFailure, attempts: number, context: HintContext): TokenExchangeError {
  const clockOffsetSeconds = offsetSeconds(outcome.clockOffsetMs);
  return new TokenExchangeError(outcome.summary, {
    reason: outcome.reason,
    transient: outcome.transient,
    status: outcome.status,
    oauthError: outcome.oauthError,
    oauthErrorDescription: outcome.oauthErrorDescription,
    attempts,
    retried: attempts > 1,
    hint: hintForFailure(outcome, attempts, clockOffsetSeconds, context),
    clockOffsetMs: outcome.clockOffsetMs,
    networkCode: outcome.networkCode,
    retryAfterSeconds: outcome.retryAfterMs === undefined ? undefined : Math.ceil(outcome.retryAfterMs / 1000),
  });
}

function hintForFailure(
  outcome: AttemptFailure,
  attempts: number,
  clockOffsetSeconds: number | undefined,
  context: HintContext,
): string {
  const tolerance = context.clockToleranceSeconds;
  switch (outcome.reason) {
    case 'http_error':
      return outcome.transient
        ? `The platform kept failing (HTTP ${outcome.status}) after ${attempts} attempt(s); it may be down or rate limiting.${outcome.retryAfterMs !== undefined ? ` It asked to retry after ${Math.ceil(outcome.retryAfterMs / 1000)} s; callers fail fast until then (at most ${MAX_RETRY_AFTER_BACKOFF_MS / 60_000} min).` : ''} ${isSkewed(clockOffsetSeconds, tolerance) ? describeClockSkew(clockOffsetSeconds) : ''}`.trim()
        : hintForRejection(
            outcome.status!,
            outcome.oauthError,
            outcome.oauthErrorDescription,
            clockOffsetSeconds,
            tolerance,
          );
    case 'redirect':
      return 'The token endpoint redirected; redirects are not followed so the assertion is never re-posted elsewhere. Check baseUrl (scheme, host) and exchange.path.';
    case 'invalid_response':
      return hintForInvalidResponse(outcome.answeredJson);
    case 'timeout':
    case 'network_error':
      return hintForUnreachable(outcome.networkCode, context.host, attempts);
    default:
      return 'The exchange was cancelled.';
  }
}

/**
 * An answer that is not a token response. A JSON answer came from an endpoint that speaks JSON — most likely the
 * token endpoint itself, with a malformed response — so the URL is not what to check; anything else (HTML, text) is
 * typically a proxy or web page at a wrong URL.
 */
function hintForInvalidResponse(answeredJson: boolean | undefined): string {
  return answeredJson
    ? "The token endpoint answered JSON that is not a valid token response (see the summary for the field); the URL reached a JSON service, so check with the platform's operators what it returns, or exchange.path if it points at another JSON endpoint."
    : "The answer was not a JSON token response the client could read: typically something other than the token endpoint answered (a proxy, a web page); check that baseUrl and exchange.path point at the platform's token endpoint.";
}

/** The host named, and for a name that does not resolve, DNS rather than firewalls as the first suspect. */
function hintForUnreachable(networkCode: string | undefined, host: string, attempts: number): string {
  if (networkCode === 'ENOTFOUND' || networkCode === 'EAI_AGAIN')
    return `The host name ${host} does not resolve (${networkCode}, ${attempts} attempt(s)): check the host of baseUrl (PLATFORM_BASE_URL) and the DNS configuration.`;
  return `The token endpoint at ${host} could not be reached after ${attempts} attempt(s): check baseUrl, DNS, proxies and firewalls.`;
}
