import { describe, expect, it } from 'vitest';
import { answerVerdict } from '../../lib/outbox/outbox.delivery.js';
import { describeCause, failureReason, redisReason } from '../../lib/outbox/outbox.reasons.js';

const JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJtYWNoaW5lLTEiLCJleHAiOjE3MDAwMDAwMDB9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg';

/** An error as Node's sockets make them: the code and where the connection was going. */
function systemError(code: string, address: string, port: number): Error {
  return Object.assign(new Error(`connect ${code} ${address}:${port}`), { code, address, port, syscall: 'connect' });
}

describe('PlatformOutbox: a failure reason', () => {
  it('follows the chain of causes down to the root code and address', () => {
    const fetchFailed = new TypeError('fetch failed', { cause: systemError('ECONNREFUSED', '127.0.0.1', 8443) });
    expect(describeCause(fetchFailed)).toBe('fetch failed: connect ECONNREFUSED 127.0.0.1:8443');
    // Node's happy-eyeballs error says nothing but its parts do.
    const both = new AggregateError([
      systemError('ECONNREFUSED', '::1', 6379),
      systemError('ECONNREFUSED', '127.0.0.1', 6379),
    ]);
    expect(redisReason(Object.assign(both, { code: 'ECONNREFUSED' }))).toBe(
      'redis: ECONNREFUSED: ECONNREFUSED ::1:6379, ECONNREFUSED 127.0.0.1:6379',
    );
    expect(describeCause(Object.assign(new Error(''), { name: 'SocketClosedUnexpectedlyError' }))).toBe(
      'SocketClosedUnexpectedlyError',
    );
    expect(describeCause({})).toBe('unknown error');
  });

  it('shows no password, token or key a message carries, and is bounded', () => {
    const leaky = new Error(
      `WRONGPASS for redis://outbox:hunter2-secret@redis.internal:6380/0 with Authorization: Bearer opaque-secret-token ${JWT}`,
      { cause: new Error('x'.repeat(100_000)) },
    );
    const reason = redisReason(leaky);
    expect(reason).toMatch(
      /^redis: WRONGPASS for redis:\/\/\[REDACTED\]@redis\.internal:6380\/0 with Authorization: Bearer \[REDACTED\]/,
    );
    expect(reason).not.toMatch(/hunter2|opaque-secret|eyJ/);
    expect(reason.length).toBeLessThanOrEqual(310);
  });
});

describe("PlatformOutbox: the platform's answer decides", () => {
  it.each([
    [400, 'refused'],
    [401, 'transient'], // the token's fault, not the message's: a later attempt carries another token
    [403, 'refused'],
    [404, 'refused'],
    [408, 'transient'],
    [409, 'refused'],
    [422, 'refused'],
    [429, 'transient'],
    [500, 'transient'], // re-sent under its idempotency key: a server error cannot act twice
    [501, 'transient'],
    [502, 'transient'],
    [503, 'transient'],
    [504, 'transient'],
  ])('HTTP %i: %s', async (status, kind) => {
    expect((await answerVerdict(new Response(null, { status }), 0)).kind).toBe(kind);
  });

  it("waits the Retry-After the platform names, in seconds or as an HTTP-date, and no other form's", async () => {
    const waitOf = async (value: string) => {
      const verdict = await answerVerdict(new Response(null, { status: 503, headers: { 'retry-after': value } }), 0);
      return verdict.kind === 'transient' ? verdict.retryAfterMs : 'not transient';
    };
    expect(await waitOf('120')).toBe(120_000);
    expect(await waitOf('Thu, 01 Jan 1970 00:01:40 GMT')).toBe(100_000);
    expect(await waitOf('-5')).toBeUndefined();
    expect(await waitOf('1.5')).toBeUndefined();
    expect(await waitOf('Thu, 31 Feb 1970 00:01:40 GMT')).toBeUndefined();
  });

  it("names BullMQ's own failures as what they mean", () => {
    expect(failureReason('job stalled more than allowable limit')).toBe(
      'stalled: its worker stopped mid-send more often than maxStalledCount allows (job stalled more than allowable limit)',
    );
    expect(failureReason('transient: HTTP 503')).toBe('transient: HTTP 503');
    expect(failureReason('Missing lock for job 7')).toBe('redis: Missing lock for job 7');
  });
});
