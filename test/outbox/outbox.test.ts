import { Test } from '@nestjs/testing';
import { describe, expect, it } from 'vitest';
import { PlatformAuthModule, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { PlatformOutbox, PlatformOutboxError, PlatformOutboxModule, type OutboxJob } from 'nestjs-platform-auth/outbox';
import type { EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { eventually } from '../support/eventually.js';
import { useRedisServer } from '../support/redis-server.js';
import { useOutboxFixtures } from './outbox-kit.js';

const redis = useRedisServer();
const start = useOutboxFixtures();

const MESSAGE = { method: 'POST', path: '/api/messages', body: { text: 'hello' } } as const;
const names = (events: { event: string }[]) => events.map((e) => e.event);

describe('PlatformOutbox: delivery', () => {
  it('sends an enqueued message once with the integration token and its id as the idempotency key', async () => {
    const f = await start(redis().url);
    const id = await f.outbox.enqueue(MESSAGE);

    await eventually(() => expect(names(f.events)).toEqual(['queued', 'sent']));
    expect(f.events[1].payload).toEqual({ id, status: 202, attempts: 1, reconciled: false });
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 1, ok: 1 });
    expect(f.platform.counters.idempotency).toEqual({ keys: 1, duplicates: 0, mismatches: 0 });
    expect(await f.outbox.status()).toMatchObject({ depth: 0, sent: 1, failed: 0, deadLettered: 0, oldestAgeMs: 0 });
  });

  it('takes an idempotency key into the id, and adds nothing when the same message is enqueued again', async () => {
    const f = await start(redis().url, { worker: false });
    const key = 'order-4711';
    const id = await f.outbox.enqueue({ ...MESSAGE, idempotencyKey: key });
    expect(id.endsWith(`.${key}`)).toBe(true);
    expect(await f.outbox.enqueue({ ...MESSAGE, idempotencyKey: key })).toBe(id);
    const status = await f.outbox.status();
    expect(status).toMatchObject({ waiting: 1, depth: 1, workers: false });
    expect(status.oldestAgeMs).toBeGreaterThanOrEqual(0);
    expect(f.platform.counters.apiCalls.total).toBe(0);
  });

  it('retries a 503 after the Retry-After it names, with the same key, and sends it once', async () => {
    const f = await start(redis().url, { retry: { attempts: 4, delayMs: 1, maxDelayMs: 5_000 } });
    f.platform.injectFault({ kind: 'status', status: 503, headers: { 'retry-after': '1' } }, 'api');
    const id = await f.outbox.enqueue(MESSAGE);

    await eventually(() => expect(names(f.events)).toEqual(['queued', 'retried', 'sent']));
    const retried = f.events[1].payload as { id: string; reason: string; delayMs: number };
    expect(retried).toMatchObject({ id, reason: 'transient: HTTP 503' });
    expect(retried.delayMs).toBeGreaterThanOrEqual(1_000);
    expect(f.platform.counters.idempotency).toEqual({ keys: 1, duplicates: 0, mismatches: 0 });
  });

  it('fails a message the platform refuses (4xx) at once, keeping the status and error code but no body text', async () => {
    const f = await start(redis().url);
    const body = { error: 'invalid_request', error_description: 'the recipient 555-0100 does not exist' };
    f.platform.injectFault({ kind: 'status', status: 400, body }, 'api');
    const id = await f.outbox.enqueue(MESSAGE);

    await eventually(() => expect(names(f.events)).toEqual(['queued', 'failed']));
    const failures = await f.outbox.failures();
    expect(failures).toEqual([expect.objectContaining({ id, reason: 'refused: HTTP 400 invalid_request' })]);
    expect(JSON.stringify(failures)).not.toContain('555-0100');
    expect(await f.outbox.deadLetters()).toEqual([]);
    expect(f.platform.counters.apiCalls.total).toBe(1);
  });

  it.each([401, 408, 429, 500, 502, 504])('retries a %i', async (status) => {
    const f = await start(redis().url);
    // A 401 is re-sent once by the client with a renewed token before the outbox sees it.
    for (let i = 0; i < (status === 401 ? 2 : 1); i += 1) f.platform.injectFault({ kind: 'status', status }, 'api');
    await f.outbox.enqueue(MESSAGE);
    await eventually(() => expect(names(f.events)).toEqual(['queued', 'retried', 'sent']));
  });

  it('dead-letters a message out of attempts, lists it, and sends it on retry(id) under the same key', async () => {
    const f = await start(redis().url, { retry: { attempts: 2, delayMs: 1, maxDelayMs: 5 } });
    for (let i = 0; i < 2; i += 1) f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
    const id = await f.outbox.enqueue(MESSAGE);

    await eventually(() => expect(names(f.events)).toEqual(['queued', 'retried', 'dead-lettered']));
    expect(await f.outbox.deadLetters()).toEqual([
      expect.objectContaining({ id, method: 'POST', path: '/api/messages', reason: 'transient: HTTP 503' }),
    ]);
    expect(await f.outbox.status()).toMatchObject({ deadLettered: 1, failed: 0, depth: 0 });

    await f.outbox.retry(id);
    await eventually(() => expect(names(f.events).at(-1)).toBe('sent'));
    expect(await f.outbox.deadLetters()).toEqual([]);
    expect(f.platform.counters.idempotency.keys).toBe(1);
    await expect(f.outbox.retry(id)).rejects.toMatchObject({ reason: 'not_found' });
    await expect(f.outbox.retry('no-such-job')).rejects.toBeInstanceOf(PlatformOutboxError);
  });

  it('asks reconcile before re-sending after a dropped connection, and ends the job without a send if delivered', async () => {
    const asked: OutboxJob[] = [];
    const f = await start(redis().url, {
      reconcile: async (job) => {
        asked.push(job);
        return 'delivered';
      },
    });
    f.platform.injectFault({ kind: 'drop' }, 'api');
    const id = await f.outbox.enqueue(MESSAGE);

    await eventually(() => expect(names(f.events)).toEqual(['queued', 'retried', 'sent']));
    expect(f.events[1].payload).toMatchObject({ reason: expect.stringMatching(/^ambiguous: /) });
    expect(f.events[2].payload).toMatchObject({ id, status: 0, reconciled: true });
    expect(asked).toEqual([expect.objectContaining({ id, attemptsMade: 1, path: '/api/messages' })]);
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 1, faulted: 1 });
  });

  it('sends again when reconcile finds no delivery, and asks nothing after a failure that sent nothing', async () => {
    let asked = 0;
    const f = await start(redis().url, {
      reconcile: async () => {
        asked += 1;
        return 'send';
      },
    });
    f.platform.injectFault({ kind: 'drop' }, 'api');
    await f.outbox.enqueue(MESSAGE);
    await eventually(() => expect(names(f.events)).toEqual(['queued', 'retried', 'sent']));
    expect(asked).toBe(1);

    f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
    await f.outbox.enqueue(MESSAGE);
    await eventually(() => expect(names(f.events).filter((e) => e === 'sent')).toHaveLength(2));
    expect(asked).toBe(1);
  });

  it('asks reconcile again when it fails, and neither sends nor gives up meanwhile', async () => {
    const answers: ('fail' | 'send')[] = ['fail', 'send'];
    const f = await start(redis().url, {
      reconcile: async () => {
        if (answers.shift() === 'fail') throw new Error('the platform search is down');
        return 'send';
      },
    });
    f.platform.injectFault({ kind: 'drop' }, 'api');
    await f.outbox.enqueue(MESSAGE);

    await eventually(() => expect(names(f.events)).toEqual(['queued', 'retried', 'retried', 'sent']));
    expect(f.events[2].payload).toMatchObject({ reason: 'ambiguous: reconcile failed' });
    expect(answers).toEqual([]);
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 2, faulted: 1, ok: 1 });
  });

  it('sends with a named integration, and fails a message for an integration the application lacks', async () => {
    const f = await start(redis().url, {
      imports: async (platform) => {
        const billing = await platform.createIntegration();
        return [PlatformAuthModule.forRoot({ ...billing.moduleOptions, name: 'billing', startupCheck: 'off' })];
      },
    });
    const id = await f.outbox.enqueue({ ...MESSAGE, integration: 'billing' });
    const unknown = await f.outbox.enqueue({ ...MESSAGE, integration: 'nowhere' });

    await eventually(() => expect(names(f.events).sort()).toEqual(['failed', 'queued', 'queued', 'sent']));
    expect(f.events.find((e) => e.event === 'sent')?.payload).toMatchObject({ id });
    expect(await f.outbox.failures()).toEqual([
      expect.objectContaining({
        id: unknown,
        reason: expect.stringMatching(/^refused: the integration 'nowhere' is not registered/),
      }),
    ]);
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 1, ok: 1 });
  });

  it("sends a tenant's message with that tenant's token, and fails one for a tenant the resolver does not know", async () => {
    let acme: EmulatedIntegration | undefined;
    const f = await start(redis().url, {
      imports: async (platform) => {
        acme = await platform.createIntegration();
        const tenants: Record<string, PlatformAuthOptions> = { acme: { ...acme.moduleOptions, startupCheck: 'off' } };
        return [PlatformAuthModule.forTenants({ resolve: async (id) => tenants[id] })];
      },
    });
    const id = await f.outbox.enqueue({ ...MESSAGE, tenant: 'acme' });
    const unknown = await f.outbox.enqueue({ ...MESSAGE, tenant: 'globex' });

    await eventually(() => expect(names(f.events).sort()).toEqual(['failed', 'queued', 'queued', 'sent']));
    expect(f.events.find((e) => e.event === 'sent')?.payload).toMatchObject({ id });
    expect(f.events.find((e) => e.event === 'failed')?.payload).toMatchObject({
      id: unknown,
      reason: expect.stringMatching(/^refused: Unknown tenant/),
    });
    // The token of the tenant's integration, not the default one's: the journal keeps keys per integration.
    const exchanges = f.platform.journal
      .filter((entry) => entry.verdict === 'accepted')
      .map((entry) => entry.machineId);
    expect(exchanges).toEqual([acme!.machineId]);
  });
});

describe('PlatformOutbox: input', () => {
  it('refuses a message it cannot send, naming the field', async () => {
    const f = await start(redis().url, { worker: false });
    const cases: [object, RegExp][] = [
      [{ ...MESSAGE, method: 'FETCH' }, /method must be one of/],
      [{ ...MESSAGE, path: 'https://elsewhere.example/api' }, /path must be a path/],
      [{ ...MESSAGE, path: '//elsewhere.example/api' }, /path must be a path/],
      [{ ...MESSAGE, path: '/\\elsewhere.example/api' }, /path must be a path/],
      [{ ...MESSAGE, body: 'x'.repeat(1_100_000) }, /over 1048576 bytes/],
      [{ ...MESSAGE, integration: 'a', tenant: 'b' }, /integration or tenant, not both/],
      [{ ...MESSAGE, idempotencyKey: 'has:colon' }, /idempotencyKey must be/],
      [{ ...MESSAGE, idempotencyKey: '12345' }, /idempotencyKey must be/],
      [{ ...MESSAGE, headers: { 'X-Trace': 'abc' } }, /the header X-Trace is not in storedHeaders/],
    ];
    for (const [message, problem] of cases) {
      await expect(f.outbox.enqueue(message as never)).rejects.toThrow(problem);
    }
    await expect(f.outbox.enqueue({ ...MESSAGE, method: 'FETCH' })).rejects.toMatchObject({
      name: 'PlatformOutboxError',
      reason: 'invalid_message',
    });
  });

  it('refuses options it cannot work with at start-up, every problem at once', async () => {
    const compiling = Test.createTestingModule({
      imports: [
        PlatformOutboxModule.forRoot({
          connection: { url: redis().url },
          storedHeaders: ['X-Trace', 'Authorization'],
          retry: { attempts: 0 },
          queueName: 'has:colon',
        }),
      ],
    }).compile();
    await expect(compiling).rejects.toThrow(
      /queueName must be .*storedHeaders may not list authorization.*retry\.attempts must be a whole number from 1/,
    );
  });

  it('takes its options from forRootAsync', async () => {
    const app = await Test.createTestingModule({
      imports: [
        PlatformOutboxModule.forRootAsync({
          useFactory: async () => ({
            connection: { url: redis().url },
            queueName: `outbox-async-${process.pid}`,
            worker: false,
          }),
        }),
      ],
    }).compile();
    await app.init();
    try {
      const outbox = app.get(PlatformOutbox);
      expect(await outbox.enqueue({ ...MESSAGE, idempotencyKey: 'async-1' })).toMatch(/\.async-1$/);
      expect(await outbox.status()).toMatchObject({ queueName: `outbox-async-${process.pid}`, waiting: 1 });
    } finally {
      await app.close();
    }
  });

  it('refuses a Redis connection it cannot use, naming the setting and the variable', async () => {
    const compiling = async (connection?: object) =>
      Test.createTestingModule({ imports: [PlatformOutboxModule.forRoot({ connection: connection as never })] })
        .compile()
        .then((app) => app.init());
    const saved = process.env.PLATFORM_OUTBOX_REDIS_URL;
    delete process.env.PLATFORM_OUTBOX_REDIS_URL;
    try {
      await expect(compiling()).rejects.toThrow(/no Redis connection.*PLATFORM_OUTBOX_REDIS_URL/);
      await expect(compiling({ url: 'http://127.0.0.1:1' })).rejects.toThrow(/redis:\/\/ or rediss:\/\/ URL/);
    } finally {
      if (saved !== undefined) process.env.PLATFORM_OUTBOX_REDIS_URL = saved;
    }
  });
});
