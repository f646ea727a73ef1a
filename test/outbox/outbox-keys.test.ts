import { describe, expect, it } from 'vitest';
import { PlatformAuthModule, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { PlatformOutboxKeyConflictError, type OutboxBodyCodec } from 'nestjs-platform-auth/outbox';
import type { EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { eventually } from '../support/eventually.js';
import { useRedisServer } from '../support/redis-server.js';
import { useOutboxFixtures } from './outbox-kit.js';

const redis = useRedisServer();
const start = useOutboxFixtures();

const MESSAGE = { method: 'POST', path: '/api/messages', body: { text: 'invoice 1001 is due' } } as const;
const sent = (events: { event: string; payload: { id: string } }[]) =>
  events.filter((e) => e.event === 'sent').map((e) => e.payload.id);

describe('PlatformOutbox: idempotency keys belong to their integration or tenant', () => {
  it("sends two tenants' messages under the same key as two messages, each with its tenant's token", async () => {
    const tenants: Record<string, EmulatedIntegration> = {};
    const f = await start(redis().url, {
      imports: async (platform) => {
        tenants.acme = await platform.createIntegration();
        tenants.globex = await platform.createIntegration();
        const options = (id: string): PlatformAuthOptions => ({ ...tenants[id].moduleOptions, startupCheck: 'off' });
        return [PlatformAuthModule.forTenants({ resolve: async (id) => options(id) })];
      },
    });
    const acme = await f.outbox.enqueue({ ...MESSAGE, tenant: 'acme', idempotencyKey: 'invoice-1001' });
    const globex = await f.outbox.enqueue({ ...MESSAGE, tenant: 'globex', idempotencyKey: 'invoice-1001' });

    expect(acme).not.toBe(globex);
    await eventually(() => expect(sent(f.events).sort()).toEqual([acme, globex].sort()));
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 2, ok: 2 });
    expect(Object.keys(f.platform.counters.apiCalls.maxPerSecond).sort()).toEqual(
      [tenants.acme.machineId, tenants.globex.machineId].sort(),
    );
    expect(f.platform.counters.idempotency).toEqual({ keys: 2, duplicates: 0, mismatches: 0 });
    expect(await f.outbox.status()).toMatchObject({ sent: 2 });
  });

  it('sends the default and a named integration’s message under the same key as two messages', async () => {
    let billing: EmulatedIntegration | undefined;
    const f = await start(redis().url, {
      imports: async (platform) => {
        billing = await platform.createIntegration();
        return [PlatformAuthModule.forRoot({ ...billing.moduleOptions, name: 'billing', startupCheck: 'off' })];
      },
    });
    const own = await f.outbox.enqueue({ ...MESSAGE, idempotencyKey: 'invoice-1001' });
    const other = await f.outbox.enqueue({ ...MESSAGE, integration: 'billing', idempotencyKey: 'invoice-1001' });

    await eventually(() => expect(sent(f.events).sort()).toEqual([own, other].sort()));
    expect(Object.keys(f.platform.counters.apiCalls.maxPerSecond).sort()).toEqual(
      [f.integration.machineId, billing!.machineId].sort(),
    );
  });

  it('returns the first id for the same request again, and keeps the key visible on the job', async () => {
    const f = await start(redis().url, { worker: false });
    const id = await f.outbox.enqueue({ ...MESSAGE, idempotencyKey: 'order-4711' });
    expect(id).toContain('order-4711');
    const reordered = { ...MESSAGE, body: { text: MESSAGE.body.text }, idempotencyKey: 'order-4711' };
    expect(await f.outbox.enqueue(reordered)).toBe(id);
    expect(await f.outbox.status()).toMatchObject({ waiting: 1, depth: 1 });
  });

  it('refuses another request under a key already used, with a typed error naming what differs, and keeps the first', async () => {
    const f = await start(redis().url);
    const id = await f.outbox.enqueue({ ...MESSAGE, idempotencyKey: 'invoice-1001' });
    const other = { ...MESSAGE, body: { text: 'invoice 1002 is due' }, idempotencyKey: 'invoice-1001' };

    const refusal = await f.outbox.enqueue(other).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(PlatformOutboxKeyConflictError);
    expect(refusal).toMatchObject({ reason: 'key_conflict', idempotencyKey: 'invoice-1001', id, differs: ['body'] });
    expect(String(refusal)).not.toContain('1002');
    await expect(f.outbox.enqueue({ ...MESSAGE, path: '/api/other', idempotencyKey: 'invoice-1001' })).rejects.toThrow(
      /idempotency key invoice-1001 is already in the outbox for another request \(its path differ\)/,
    );

    await eventually(() => expect(sent(f.events)).toEqual([id]));
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 1, ok: 1 });
    expect(f.events.filter((e) => e.event === 'queued')).toHaveLength(1);
  });

  it('stores one of two requests raced under one key and refuses the other, and acknowledges a request raced with itself', async () => {
    const f = await start(redis().url, { worker: false });
    const other = { ...MESSAGE, body: { text: 'invoice 1002 is due' }, idempotencyKey: 'raced-1' };
    const outcomes = await Promise.allSettled([
      f.outbox.enqueue({ ...MESSAGE, idempotencyKey: 'raced-1' }),
      f.outbox.enqueue(other),
    ]);
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    const refused = outcomes.find((outcome) => outcome.status === 'rejected');
    expect(refused?.reason).toBeInstanceOf(PlatformOutboxKeyConflictError);
    expect(refused?.reason).toMatchObject({ idempotencyKey: 'raced-1', differs: ['body'] });

    const same = { ...MESSAGE, idempotencyKey: 'raced-2' };
    const [first, second] = await Promise.all([f.outbox.enqueue(same), f.outbox.enqueue({ ...same })]);
    expect(second).toBe(first);
    expect(await f.outbox.status()).toMatchObject({ waiting: 2 });
  });

  it('refuses a request under a key whose job holds data that is not JSON, written by something else than enqueue', async () => {
    const f = await start(redis().url, { worker: false });
    const id = await f.outbox.enqueue({ ...MESSAGE, idempotencyKey: 'overwritten-1' });
    await redis().command('HSET', `bull:{${f.queueName}}:${f.queueName}:${id}`, 'data', 'not { json');

    const refusal = await f.outbox.enqueue({ ...MESSAGE, idempotencyKey: 'overwritten-1' }).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(PlatformOutboxKeyConflictError);
    expect(refusal).toMatchObject({ idempotencyKey: 'overwritten-1', id, differs: ['stored data'] });
  });

  it('compares a sealed body by its content, so the same request is acknowledged and another refused', async () => {
    const codec: OutboxBodyCodec = {
      // A new nonce each time, as a real cipher: the stored texts of one body differ.
      encode: (body) => `${Math.random()}|${JSON.stringify(body)}`,
      decode: (stored) => JSON.parse(stored.slice(stored.indexOf('|') + 1)) as unknown,
    };
    const f = await start(redis().url, { worker: false, bodyCodec: codec });
    const id = await f.outbox.enqueue({ ...MESSAGE, idempotencyKey: 'sealed-1' });
    expect(await f.outbox.enqueue({ ...MESSAGE, idempotencyKey: 'sealed-1' })).toBe(id);
    await expect(f.outbox.enqueue({ ...MESSAGE, body: { text: 'other' }, idempotencyKey: 'sealed-1' })).rejects.toThrow(
      PlatformOutboxKeyConflictError,
    );
  });
});
