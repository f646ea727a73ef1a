import { describe, expect, it } from 'vitest';
import { FakeClock } from 'nestjs-platform-auth/testing';
import { PlatformOutboxError } from '../../lib/outbox/outbox.errors.js';
import { resolveOutboxSettings } from '../../lib/outbox/outbox.settings.js';
import type { Clock } from '../../lib/platform-auth.clock.js';
import { useRedisServer } from '../support/redis-server.js';
import { useOutboxFixtures } from './outbox-kit.js';

const redis = useRedisServer();
const start = useOutboxFixtures();
const MESSAGE = { method: 'POST', path: '/api/messages', body: { text: 'hello' } } as const;
const HOUR = 3_600_000;

describe('PlatformOutbox: the injected clock', () => {
  it("status() tells the oldest job's age by the outbox's clock", async () => {
    const clock = new FakeClock();
    const f = await start(redis().url, { worker: false, clock });
    await f.outbox.enqueue(MESSAGE);
    // An hour on, by the injected clock only: the age is read from it, not from the system's.
    clock.set(Date.now() + HOUR);
    const { oldestAgeMs, depth } = await f.outbox.status();
    expect(depth).toBe(1);
    expect(oldestAgeMs).toBeGreaterThanOrEqual(HOUR);
    expect(oldestAgeMs).toBeLessThan(HOUR + 60_000);
  });

  it('refuses a clock without now() and sleep(ms), naming the option', () => {
    const error = (() => {
      try {
        return resolveOutboxSettings({ clock: { now: 5 } as unknown as Clock });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(PlatformOutboxError);
    expect((error as Error).message).toContain('clock must have now() and sleep(ms) functions');
  });
});
