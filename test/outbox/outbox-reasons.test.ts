import { describe, expect, it } from 'vitest';
import { describeCause, redisReason } from '../../lib/outbox/outbox.reasons.js';

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
