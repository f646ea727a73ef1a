import { describe, expect, it } from 'vitest';
import { isRetriableStatus } from '../../lib/calls/retry.policy.js';
import { isTransientStatus } from '../../lib/platform-auth.errors.js';
import { isTransientAnswer, type AnswerPath } from '../../lib/util/transient.rules.js';
import { usePlatformFixtures } from '../support/platform-fixture.js';

const start = usePlatformFixtures();

/** Each path's verdict per status: T tries again, R is a refusal. Columns: exchange, calls. */
const TABLE: readonly (readonly [number, string])[] = [
  [400, 'R R'],
  [401, 'R R'], // calls: the bearer policy's one re-send after a 401 is no retry
  [403, 'R R'],
  [404, 'R R'],
  [408, 'T R'], // calls: no retry reason for it in the observer
  [409, 'R R'],
  [422, 'R R'],
  [425, 'R R'],
  [429, 'T T'],
  [500, 'T R'], // calls: a server error may have acted on the call
  [501, 'T R'],
  [502, 'T T'],
  [503, 'T T'],
  [504, 'T T'],
];
const PATHS: readonly AnswerPath[] = ['exchange', 'calls'];

describe('which answers are tried again: one table for the exchange and calls', () => {
  it.each(TABLE)('HTTP %i: exchange, calls say %s', (status, verdicts) => {
    const expected = verdicts.split(' ').map((verdict) => verdict === 'T');
    expect([isTransientStatus(status), isRetriableStatus(status)]).toEqual(expected);
    // Each path's function is the one rule read for that path, not a rule of its own.
    expect(PATHS.map((path) => isTransientAnswer(status, path))).toEqual(expected);
  });

  it('a 2xx is no failure for the exchange or calls', () => {
    for (const path of PATHS) expect(isTransientAnswer(200, path)).toBe(false);
  });

  it('the token exchange tries again after a 408, 500 and 501 from the token endpoint, and not after a 409', async () => {
    const f = await start();
    let token = await f.tokens.getAccessToken();
    for (const status of [408, 500, 501]) {
      const before = f.platform.counters.exchanges.total;
      f.tokens.invalidate(token);
      f.platform.injectFault({ kind: 'status', status });
      token = await f.tokens.getAccessToken();
      expect(f.platform.counters.exchanges.total - before, `HTTP ${status}`).toBe(2);
    }
    f.tokens.invalidate(token);
    f.platform.injectFault({ kind: 'status', status: 409 });
    const error = await f.tokens.getAccessToken().catch((caught: unknown) => caught);
    expect(error).toMatchObject({ reason: 'http_error', status: 409, retried: false });
  });

  it('calls re-send a GET after 429 (with Retry-After), 502, 503 and 504, and hand 408, 409 and 500 to the caller', async () => {
    const f = await start();
    await f.tokens.getAccessToken();
    for (const [status, resent] of [
      [429, true],
      [502, true],
      [503, true],
      [504, true],
      [408, false],
      [409, false],
      [500, false],
    ] as const) {
      // A minute apart: each re-send is the retry budget's first of its minute.
      f.clock.advance(60_000);
      const before = f.platform.counters.apiCalls.total;
      f.platform.injectFault({ kind: 'status', status, headers: { 'Retry-After': '1' } }, 'api');
      const answer = await f.http.axiosRef.get('/api/billing', { validateStatus: () => true });
      expect({ status, answer: answer.status, sent: f.platform.counters.apiCalls.total - before }).toEqual({
        status,
        answer: resent ? 200 : status,
        sent: resent ? 2 : 1,
      });
    }
  });
});
