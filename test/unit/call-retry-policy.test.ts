import { describe, expect, it } from 'vitest';
import { PlatformUnavailableError, TokenExchangeError } from 'nestjs-platform-auth';
import { FakeClock } from 'nestjs-platform-auth/testing';
import { systemClock } from '../../lib/platform-auth.clock.js';
import type { RetryReason } from '../../lib/platform-auth.observer.js';
import { shutdownError } from '../../lib/platform-auth.errors.js';
import type { CallGate } from '../../lib/calls/call-gate.js';
import { CallRetryPolicy } from '../../lib/calls/retry.policy.js';
import type { CallRetrySettings, IdempotencyKeySettings } from '../../lib/options/calls.resolver.js';

const DEFAULTS: CallRetrySettings = {
  maxAttempts: 3,
  baseDelayMs: 200,
  maxDelayMs: 30_000,
  budgetPercent: 10,
  budgetMinPerMinute: 10,
};

/** Keys off, as without `idempotencyKey`: the header only finds a caller's own key. */
const NO_KEYS: IdempotencyKeySettings = { header: 'idempotency-key', methods: new Set() };

function policyWith(settings: Partial<CallRetrySettings> = {}, idempotency = NO_KEYS) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const seen: { retried: [RetryReason, number][]; exhausted: number } = { retried: [], exhausted: 0 };
  const policy = new CallRetryPolicy({ ...DEFAULTS, ...settings }, idempotency, clock, {
    retried: (reason, count) => seen.retried.push([reason, count]),
    retryBudgetExhausted: () => (seen.exhausted += 1),
  });
  const holds: number[] = [];
  const gate: CallGate = { acquire: () => Promise.resolve(), holdUntil: (until) => holds.push(until) };
  const call = { eligible: true, gate, method: 'GET', url: 'https://platform.example/api' };
  return { clock, seen, policy, holds, call };
}

describe('the retry policy of calls', () => {
  it("a wait on the system clock ends with the shutdown error at shutdown, and with the caller's reason on its abort", async () => {
    const observer = { retried: () => undefined, retryBudgetExhausted: () => undefined };
    const shutdown = new AbortController();
    const policy = new CallRetryPolicy(DEFAULTS, NO_KEYS, systemClock, observer, shutdown.signal);
    const atShutdown = policy.wait(60_000, new AbortController().signal).catch((error: unknown) => error);
    shutdown.abort(shutdownError());
    expect(await atShutdown).toMatchObject({ name: 'TokenExchangeError', reason: 'aborted' });

    const caller = new AbortController();
    const open = new CallRetryPolicy(DEFAULTS, NO_KEYS, systemClock, observer, new AbortController().signal);
    const aborted = open.wait(60_000, caller.signal).catch((error: unknown) => error);
    const reason = new Error('the caller gave up');
    caller.abort(reason);
    expect(await aborted).toBe(reason);
  });

  it('allows re-sending GET, HEAD, OPTIONS, PUT and DELETE; POST and PATCH only with a key; never a stream or an opt-out', () => {
    const { policy } = policyWith();
    for (const method of ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE'])
      expect(policy.allows(method, false, false, true)).toBe(true);
    expect(policy.allows('POST', false, false, true)).toBe(false);
    expect(policy.allows('PATCH', false, false, true)).toBe(false);
    expect(policy.allows('POST', true, false, true)).toBe(true);
    expect(policy.allows('GET', false, true, true)).toBe(false);
    expect(policy.allows('PUT', false, false, false)).toBe(false);
    expect(policyWith({ maxAttempts: 1 }).policy.allows('GET', false, false, true)).toBe(false);
  });

  it('gives a new key to the configured methods only, a new one each time', () => {
    const { policy } = policyWith({}, { header: 'x-request-key', methods: new Set(['POST', 'PURGE']) });
    expect(policy.keyHeader('purge')).toBe('x-request-key');
    expect(policy.newKey('post')).toMatch(/^[0-9a-f-]{36}$/);
    expect(policy.newKey('POST')).not.toBe(policy.newKey('POST'));
    expect(policy.newKey('PATCH')).toBeUndefined();
    expect(policyWith().policy.newKey('POST')).toBeUndefined();
  });

  it("finds a caller's own key of a POST or PATCH in the configured header, with keys on or off", () => {
    const keyed = policyWith({}, { header: 'x-request-key', methods: new Set(['POST']) }).policy;
    expect(keyed.keyHeader('PATCH')).toBe('x-request-key');
    expect(keyed.keyHeader('GET')).toBeUndefined();
    const off = policyWith().policy;
    expect(['POST', 'patch', 'GET', 'PUT'].map((method) => off.keyHeader(method))).toEqual([
      'idempotency-key',
      'idempotency-key',
      undefined,
      undefined,
    ]);
  });

  it('backs off exponentially with equal jitter, capped at maxDelayMs', () => {
    const { policy, call } = policyWith({ maxAttempts: 10, baseDelayMs: 1_000, maxDelayMs: 5_000 });
    const delays = [1, 2, 3, 4].map((attempt) => policy.afterAnswer(503, undefined, attempt, call)!);
    for (const [i, ceiling] of [1_000, 2_000, 4_000, 5_000].entries()) {
      expect(delays[i]).toBeGreaterThanOrEqual(ceiling / 2);
      expect(delays[i]).toBeLessThanOrEqual(ceiling);
    }
  });

  it('honours Retry-After and holds the gate for a 429 or 503, whether or not this call is re-sent', () => {
    const { policy, call, holds, clock } = policyWith();
    expect(policy.afterAnswer(429, '4', 1, call)).toBe(4_000);
    expect(policy.afterAnswer(503, '2', 1, { ...call, eligible: false })).toBeUndefined();
    expect(policy.afterAnswer(502, '9', 1, call)).toBe(9_000);
    expect(holds).toEqual([clock.now() + 4_000, clock.now() + 2_000]);
  });

  it('does not re-send a 429 without Retry-After, nor past maxAttempts', () => {
    const { policy, call } = policyWith();
    expect(policy.afterAnswer(429, undefined, 1, call)).toBeUndefined();
    expect(policy.afterAnswer(503, undefined, 3, call)).toBeUndefined();
  });

  it('fails at once when Retry-After is beyond maxDelayMs, saying when the platform takes calls again', () => {
    const { policy, call, clock } = policyWith({ maxDelayMs: 10_000 });
    const error = (() => {
      try {
        policy.afterAnswer(429, '11', 1, call);
      } catch (thrown) {
        return thrown as PlatformUnavailableError;
      }
    })();
    expect(error).toBeInstanceOf(PlatformUnavailableError);
    expect(error).toMatchObject({ status: 429, retryAfterMs: 11_000, availableAtMs: clock.now() + 11_000 });
  });

  it('re-sends after a connection failure found on a cause, not after an abort, an answer or a failed exchange', () => {
    const { policy } = policyWith();
    const reset = new TypeError('fetch failed', { cause: Object.assign(new Error('socket'), { code: 'ECONNRESET' }) });
    expect(policy.afterFailure(reset, 1, undefined)).toBeTypeOf('number');
    expect(policy.afterFailure(reset, 1, AbortSignal.abort())).toBeUndefined();
    expect(policy.afterFailure({ code: 'ECONNRESET', response: { status: 500 } }, 1, undefined)).toBeUndefined();
    expect(policy.afterFailure({ code: 'ECONNABORTED' }, 1, undefined)).toBeUndefined();
    const exchange = new TokenExchangeError('token endpoint unreachable', {
      reason: 'network_error',
      transient: true,
      attempts: 4,
      retried: true,
      hint: 'Check the network.',
      networkCode: 'ECONNREFUSED',
    });
    Object.assign(exchange, { cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }) });
    expect(policy.afterFailure(exchange, 1, undefined)).toBeUndefined();
  });

  it('keeps re-sends within 10 % of the last minute of calls plus 10, says so once, and forgets after a minute', () => {
    const { policy, call, seen, clock } = policyWith();
    for (let i = 0; i < 100; i += 1) policy.countCall();
    const granted = Array.from({ length: 25 }, () => policy.afterAnswer(503, '1', 1, call)).filter(
      (delay) => delay !== undefined,
    );
    expect(granted).toHaveLength(20);
    expect(seen.exhausted).toBe(1);
    expect(seen.retried).toHaveLength(20);
    clock.advance(60_000);
    expect(policy.afterAnswer(503, '1', 1, call)).toBe(1_000);
    expect(seen.retried.at(-1)).toEqual(['unavailable', 1]);
  });
});
