import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { INestApplication, INestApplicationContext, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OutboxBodyCodec, PlatformOutbox } from 'nestjs-platform-auth/outbox';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { OUTBOX_VARIABLES, OUTBOX_VARIABLE_NAMES } from '../../lib/outbox/outbox.settings.js';
import { blockContaining, importBlock, repositoryRoot, scratchProject } from '../support/docs-blocks.js';
import { eventually } from '../support/eventually.js';
import { useRedisServer } from '../support/redis-server.js';
import { restoreEnv } from '../support/environment.js';
import { useOutboxFixtures } from './outbox-kit.js';

const redis = useRedisServer();
const start = useOutboxFixtures();
const scratch = scratchProject();
afterAll(() => scratch.remove());

const block = <T>(needle: string) => importBlock<T>(blockContaining('docs/outbox.md', needle), scratch.dir);

describe('docs/outbox.md', () => {
  let platform: PlatformEmulator;
  const saved = { ...process.env };
  beforeAll(async () => {
    platform = await PlatformEmulator.start();
  });
  afterAll(async () => {
    restoreEnv(saved);
    await platform.close();
  });

  it('sends a message posted to the controller of one process from the worker process', async () => {
    const integration = await platform.createIntegration();
    Object.assign(process.env, integration.env, { PLATFORM_OUTBOX_REDIS_URL: redis().url });
    const { AppModule } = await block<{ AppModule: Type }>('class MessagesController');
    const { WorkerModule } = await block<{ WorkerModule: Type }>('class WorkerModule');
    const web: INestApplication = await NestFactory.create(AppModule, { logger: false });
    await web.init();
    const worker: INestApplicationContext = await NestFactory.createApplicationContext(WorkerModule, {
      logger: false,
    });
    try {
      const answer = await request(web.getHttpServer())
        .post('/messages')
        .send({ requestId: 'req-1', to: 'someone', text: 'hello' })
        .expect(201);
      expect(answer.body).toEqual({ id: expect.stringMatching(/\.req-1$/) });
      await request(web.getHttpServer()).post('/messages').send({ requestId: 'req-1', to: 'someone', text: 'hello' });
      await eventually(() => expect(platform.counters.idempotency).toMatchObject({ keys: 1 }));
      expect(platform.counters.apiCalls.ok).toBe(1);
    } finally {
      await web.close();
      await worker.close();
    }
  });

  it('re-queues every dead letter with the routine, and lists refusals', async () => {
    const { DeadLetterRoutine } = await block<{
      DeadLetterRoutine: new (outbox: PlatformOutbox) => {
        requeueAll(): Promise<number>;
        refusals(): Promise<string[]>;
      };
    }>('class DeadLetterRoutine');
    const f = await start(redis().url, { retry: { attempts: 1, delayMs: 1, maxDelayMs: 1 } });
    f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
    f.platform.injectFault({ kind: 'status', status: 422, body: { error: 'unknown_recipient' } }, 'api');
    const dead = await f.outbox.enqueue({ method: 'POST', path: '/api/messages', body: { n: 1 } });
    await eventually(() => expect(f.events.map((e) => e.event)).toContain('dead-lettered'));
    const refused = await f.outbox.enqueue({ method: 'POST', path: '/api/messages', body: { n: 2 } });
    await eventually(() => expect(f.events.map((e) => e.event)).toContain('failed'));

    const routine = new DeadLetterRoutine(f.outbox);
    expect(await routine.requeueAll()).toBe(1);
    await eventually(() => expect(f.events.filter((e) => e.event === 'sent').map((e) => e.payload.id)).toEqual([dead]));
    expect(await routine.refusals()).toEqual([`${refused}: refused: HTTP 422 unknown_recipient`]);
  });

  it("keeps bodies encrypted at rest with the page's codec, and sends them in clear", async () => {
    const { aesGcmCodec } = await block<{ aesGcmCodec: (key: Buffer) => OutboxBodyCodec }>('aesGcmCodec');
    const f = await start(redis().url, { bodyCodec: aesGcmCodec(randomBytes(32)) });
    const id = await f.outbox.enqueue({ method: 'POST', path: '/api/messages', body: { text: 'top secret text' } });
    // The emulator answers 400 to a body that is not JSON: 202 means the worker sent the decoded body.
    await eventually(() => expect(f.events.at(-1)).toMatchObject({ event: 'sent', payload: { id, status: 202 } }));
    const stored = JSON.parse(
      String(await redis().command('HGET', `bull:{${f.queueName}}:${f.queueName}:${id}`, 'data')),
    ) as object;
    expect(stored).toMatchObject({ sealed: true, body: expect.any(String) });
    expect(JSON.stringify(stored)).not.toContain('top secret');
  });

  it('dead-letters a sealed message a worker cannot open, instead of sending it garbled', async () => {
    const { aesGcmCodec } = await block<{ aesGcmCodec: (key: Buffer) => OutboxBodyCodec }>('aesGcmCodec');
    const enqueuer = await start(redis().url, { worker: false, bodyCodec: aesGcmCodec(randomBytes(32)) });
    const id = await enqueuer.outbox.enqueue({ method: 'POST', path: '/api/messages', body: { text: 'x' } });
    const worker = await start(redis().url, {
      platform: enqueuer.platform,
      queueName: enqueuer.queueName,
      bodyCodec: aesGcmCodec(randomBytes(32)),
    });
    // The job's attempts are the enqueuing process's (4), whatever the worker's own setting.
    await eventually(() =>
      expect(worker.events.map((e) => e.event)).toEqual(['retried', 'retried', 'retried', 'dead-lettered']),
    );
    expect(await worker.outbox.deadLetters()).toEqual([
      expect.objectContaining({ id, reason: 'transient: bodyCodec.decode failed on the stored body (another key?)' }),
    ]);
    expect(enqueuer.platform.counters.apiCalls.total).toBe(0);
  });

  it("lists the outbox's variables row for row as the code reads them: option, variable, default, rule", () => {
    const page = readFileSync(`${repositoryRoot}/docs/outbox.md`, 'utf8');
    const block = /<!-- outbox-variables-table -->([\s\S]*?)<!-- \/outbox-variables-table -->/.exec(page)?.[1] ?? '';
    const documented = block
      .split('\n')
      .filter((line) => line.startsWith('|'))
      .slice(2)
      .map((line) =>
        line
          .split('|')
          .slice(1, -1)
          .map((cell) => cell.trim()),
      );
    const shown = (value: number | boolean) =>
      typeof value === 'number' ? value.toLocaleString('en-US') : `\`${value}\``;
    expect(documented).toEqual(
      Object.entries(OUTBOX_VARIABLES).map(([option, row]) => [
        `\`${option}\``,
        `\`${row.env}\``,
        shown(row.default),
        row.rule,
      ]),
    );
    // The Redis variables, by their suffixes in the prose: each one the outbox declares it reads.
    for (const name of OUTBOX_VARIABLE_NAMES.filter((variable) => variable.startsWith('PLATFORM_OUTBOX_REDIS_'))) {
      expect(page).toContain(
        name === 'PLATFORM_OUTBOX_REDIS_URL' ? name : `\`${name.slice('PLATFORM_OUTBOX_REDIS'.length)}\``,
      );
    }
  });
});
