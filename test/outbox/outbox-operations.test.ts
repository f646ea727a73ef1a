import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { DataPointType } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_AUTH_DIAGNOSTICS_CHANNEL } from 'nestjs-platform-auth';
import { PlatformOutboxHealthIndicator, PlatformOutboxModule } from 'nestjs-platform-auth/outbox';
import { codeIn, operationsTables } from '../support/markdown-tables.js';
import { eventually } from '../support/eventually.js';
import { installOtelMemory, type OtelMemory } from '../support/otel-memory.js';
import { refusedPort } from '../support/loopback-server.js';
import { useRedisServer } from '../support/redis-server.js';
import { useOutboxFixtures } from './outbox-kit.js';

const redis = useRedisServer();
const start = useOutboxFixtures();
const MESSAGE = { method: 'POST', path: '/api/messages', body: { text: 'hello' } } as const;

const documented = () => operationsTables('\n## The outbox', '\n## Telemetry');

let otel: OtelMemory;
const published: Record<string, unknown>[] = [];
const onEvent = (event: unknown) => published.push(event as Record<string, unknown>);
beforeAll(() => {
  otel = installOtelMemory();
  subscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, onEvent);
});
afterAll(async () => {
  unsubscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, onEvent);
  await otel.close();
});

describe('outbox telemetry', () => {
  it('counts every event docs/operations.md lists, with the attributes it lists, and publishes them', async () => {
    const f = await start(redis().url, { retry: { attempts: 2, delayMs: 1, maxDelayMs: 5 } });
    f.platform.injectFault({ kind: 'status', status: 400, body: { error: 'invalid_request' } }, 'api');
    await f.outbox.enqueue(MESSAGE);
    await eventually(() => expect(f.events.map((e) => e.event)).toContain('failed'));
    for (let i = 0; i < 2; i += 1) f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
    await f.outbox.enqueue(MESSAGE);
    await eventually(() => expect(f.events.map((e) => e.event)).toContain('dead-lettered'));
    await f.outbox.enqueue(MESSAGE);
    await eventually(() => expect(f.events.map((e) => e.event)).toContain('sent'));

    const tables = documented();
    const [[name, instrument, unit, attributes]] = tables.get('outbox metric')!;
    const metric = (await otel.collect()).get(codeIn(name)[0])!;
    expect(metric).toBeDefined();
    expect(metric.dataPointType).toBe(DataPointType.SUM);
    expect(instrument).toBe('counter');
    expect(codeIn(unit)).toEqual([metric.descriptor.unit]);
    const points = metric.dataPoints.map((point) => point.attributes);
    expect(new Set(points.flatMap((point) => Object.keys(point)))).toEqual(new Set(codeIn(attributes)));
    const counted = new Set(points.map((point) => point['platform_auth.outbox.event']));
    expect(counted).toEqual(new Set(tables.get('event')!.map(([, value]) => codeIn(value)[0])));
    expect(new Set(points.map((point) => point['platform_auth.integration.name']))).toEqual(new Set(['default']));

    const outcomes = published.filter((event) => event.event === 'outbox' && event.queue === f.queueName);
    expect(new Set(outcomes.map((event) => event.outcome))).toEqual(counted);
    expect(outcomes[0]).toEqual({ integration: 'default', event: 'outbox', outcome: 'queued', queue: f.queueName });
    // The emitter's names: the table's first column.
    expect(new Set(f.events.map((e) => e.event))).toEqual(
      new Set(tables.get('event')!.map(([event]) => codeIn(event)[0])),
    );
  });
});

describe('PlatformOutboxHealthIndicator', () => {
  it("is up with the queue's status, and down past maxOldestAgeMs or maxDeadLetters", async () => {
    const f = await start(redis().url, { worker: false });
    const health = f.app.get(PlatformOutboxHealthIndicator);
    const up = await health.isHealthy();
    expect(up).toEqual({
      'platform-outbox': expect.objectContaining({ status: 'up', depth: 0, deadLettered: 0, workers: false }),
    });

    await f.outbox.enqueue(MESSAGE);
    await eventually(async () => expect((await f.outbox.status()).oldestAgeMs).toBeGreaterThan(0));
    const late = await health.isHealthy('outbox', { maxOldestAgeMs: 0 });
    expect(late.outbox).toMatchObject({ status: 'down', depth: 1, message: expect.stringMatching(/oldest message/) });
    expect(JSON.stringify(late)).not.toContain('hello');
    expect((await health.isHealthy('outbox', { maxDeadLetters: 0 })).outbox.status).toBe('up');
  });

  it('is down when Redis does not answer, and Terminus reads it as down', async () => {
    const nowhere = `redis://127.0.0.1:${await refusedPort()}`;
    const app = await Test.createTestingModule({
      imports: [TerminusModule, PlatformOutboxModule.forRoot({ connection: { url: nowhere }, enqueueTimeoutMs: 200 })],
    }).compile();
    await app.init();
    try {
      const indicator = app.get(PlatformOutboxHealthIndicator);
      const down = await indicator.isHealthy();
      expect(down['platform-outbox']).toMatchObject({ status: 'down', message: expect.stringMatching(/Redis/) });
      const check = await app
        .get(HealthCheckService)
        .check([() => indicator.isHealthy()])
        .catch((error: { response?: unknown }) => error.response);
      expect(check).toMatchObject({ status: 'error', error: { 'platform-outbox': { status: 'down' } } });
    } finally {
      await app.close();
    }
  });
});
