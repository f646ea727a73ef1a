import { randomBytes } from 'node:crypto';
import { Test } from '@nestjs/testing';
import { getAdapter, type AxiosAdapter, type AxiosResponse } from 'axios';
import { describe, expect, it } from 'vitest';
import { PlatformAuthModule, PlatformHttpService, TokenProvider, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { FakeClock, PlatformEmulator } from 'nestjs-platform-auth/testing';
import { useCleanup } from '../support/cleanup.js';
import { eventually } from '../support/eventually.js';
import { useRedisServer } from '../support/redis-server.js';

// The platform expires tokens by its own clock: when it jumps ahead past their lifetime, every token issued before
// the jump is refused at once, the newest one too, however fresh the replicas think it is.
const redis = useRedisServer();
const track = useCleanup();

const LIFETIME_S = 60;
/** Past the lifetime of every token issued before the jump, like the soak's jump. */
const JUMP_MS = 90_000;

async function startPlatform() {
  // Sleeps (the minimum interval between two exchanges) pass at once; the test moves time itself otherwise.
  const clock = new FakeClock(Date.now(), { autoAdvance: true });
  const platform = track(await PlatformEmulator.start({ now: () => clock.now(), tokenLifetimeSeconds: LIFETIME_S }));
  const integration = await platform.createIntegration();
  return { clock, platform, options: { ...integration.moduleOptions, clock } as PlatformAuthOptions };
}

async function replica(options: PlatformAuthOptions) {
  const moduleRef = await Test.createTestingModule({ imports: [PlatformAuthModule.forRoot(options)] }).compile();
  await moduleRef.init();
  track(moduleRef);
  return { tokens: moduleRef.get(TokenProvider), http: moduleRef.get(PlatformHttpService) };
}

function billing(http: PlatformHttpService, adapter?: AxiosAdapter): Promise<AxiosResponse> {
  return http.axiosRef.get('/api/billing', { validateStatus: () => true, ...(adapter ? { adapter } : {}) });
}

/** The real HTTP adapter, held at a gate: the request leaves (with its token set) only once the test opens it. */
function gatedAdapter() {
  const http = getAdapter('http', {});
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let arrived!: () => void;
  const held = new Promise<void>((resolve) => (arrived = resolve));
  let waiting = 0;
  const adapter: AxiosAdapter = async (config) => {
    waiting += 1;
    if (waiting === 2) arrived();
    await gate;
    return http(config);
  };
  return { adapter, open, bothHeld: held };
}

describe('a platform clock jump', () => {
  it('reaches no application call in a fleet whose store holds a token another replica renewed before the jump', async () => {
    const { clock, platform, options } = await startPlatform();
    const shared: PlatformAuthOptions = {
      ...options,
      tokenStore: {
        url: redis().url,
        encryptionKey: randomBytes(32).toString('base64'),
        keyPrefix: `jump-${randomBytes(4).toString('hex')}:`,
        operationTimeoutMs: 2_000,
        lockTtlMs: 10_000,
        waitTimeoutMs: 20_000,
      },
    };
    // Two renewal windows that do not overlap (the lead is at most half the lifetime, 30 s; jitter makes it later).
    const early = await replica({ ...shared, refreshBeforeExpirySeconds: 30 });
    const late = await replica({ ...shared, refreshBeforeExpirySeconds: 10 });
    const first = await early.tokens.getAccessToken();
    expect(await late.tokens.getAccessToken()).toBe(first);

    // 40 s: inside the early replica's window (27–30 s before expiry), not the late one's (9–10 s).
    clock.advance(40_000);
    expect(early.tokens.peekAccessToken()).toBe(first);
    await eventually(() => expect(early.tokens.peekAccessToken()).not.toBe(first));
    expect(late.tokens.peekAccessToken()).toBe(first);
    expect(platform.counters.exchanges.accepted).toBe(2);

    // Both tokens are dead on the platform now; the store holds the renewed one, which the late replica never sent.
    platform.setClockOffset(JUMP_MS);
    expect((await billing(late.http)).status).toBe(200);
    expect((await billing(early.http)).status).toBe(200);
    expect(platform.counters.apiCalls).toMatchObject({ ok: 2, unauthorized: 2 });
  });

  it('reaches no application call when a renewal lands while the calls that meet the jump are on their way', async () => {
    const { clock, platform, options } = await startPlatform();
    const { tokens, http } = await replica(options);
    const first = await tokens.getAccessToken();

    // Two calls leave with the first token and are held on their way to the platform.
    const { adapter, open, bothHeld } = gatedAdapter();
    const calls = [billing(http, adapter), billing(http, adapter)];
    await bothHeld;

    // Meanwhile the token is renewed (35 s: inside the 27–30 s window before expiry), before the platform's jump.
    clock.advance(35_000);
    expect(tokens.peekAccessToken()).toBe(first);
    await eventually(() => expect(tokens.peekAccessToken()).not.toBe(first));
    platform.setClockOffset(JUMP_MS);
    open();

    // Each call meets one 401, and both share one renewal: neither re-send carries a token issued before the jump.
    expect((await Promise.all(calls)).map((response) => response.status)).toEqual([200, 200]);
    expect(platform.counters.apiCalls).toMatchObject({ ok: 2, unauthorized: 2 });
    expect(platform.counters.exchanges.accepted).toBe(3);
  });
});
