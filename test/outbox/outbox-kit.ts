import type { DynamicModule, LoggerService, Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { PlatformAuthModule } from 'nestjs-platform-auth';
import {
  PlatformOutbox,
  PlatformOutboxModule,
  type OutboxEvents,
  type PlatformOutboxOptions,
} from 'nestjs-platform-auth/outbox';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startHoldingProxy, type HoldingProxy } from '../support/holding-proxy.js';

export interface OutboxFixture {
  platform: PlatformEmulator;
  integration: EmulatedIntegration;
  app: TestingModule;
  outbox: PlatformOutbox;
  /** Every event the outbox emitted, in order. */
  events: { event: keyof OutboxEvents; payload: OutboxEvents[keyof OutboxEvents][0] }[];
  queueName: string;
}

let queues = 0;

/** Back-off in milliseconds, so a test's retries take no noticeable time. */
export const QUICK_RETRY = { attempts: 4, delayMs: 1, maxDelayMs: 20 } as const;

/**
 * An emulator, and an application with the default integration on it and the outbox on `redisUrl` (a queue of its
 * own per fixture, so tests of one file share one redis-server). Closed after each test.
 */
export function useOutboxFixtures(): (
  redisUrl: string,
  options?: PlatformOutboxOptions & {
    platform?: PlatformEmulator;
    /** A base URL in front of the platform (a holding proxy) that the integration sends through. */
    through?: string;
    /** Nest's logger for the application (the outbox's lines go there). */
    logger?: LoggerService;
    /** Modules beside the default integration: named integrations, a tenant registry. */
    imports?: (platform: PlatformEmulator) => Promise<(DynamicModule | Type)[]>;
  },
) => Promise<OutboxFixture> {
  const open: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of open.splice(0).reverse()) await close();
  });
  return async (redisUrl, { platform: given, imports, through, logger, ...options } = {}) => {
    const platform = given ?? (await PlatformEmulator.start());
    if (!given) open.push(() => platform.close());
    const integration = await platform.createIntegration();
    const queueName = options.queueName ?? `outbox-test-${process.pid}-${(queues += 1)}`;
    // Through a proxy, the audience stays the platform's.
    const route = through === undefined ? {} : { baseUrl: through, audience: new URL(platform.url).host };
    const builder = Test.createTestingModule({
      imports: [
        PlatformAuthModule.forRoot({ ...integration.moduleOptions, ...route, startupCheck: 'off' }),
        PlatformOutboxModule.forRoot({ connection: { url: redisUrl }, queueName, retry: QUICK_RETRY, ...options }),
        ...((await imports?.(platform)) ?? []),
      ],
    });
    const app = await (logger ? builder.setLogger(logger) : builder).compile();
    await app.init();
    open.push(() => app.close());
    const outbox = app.get(PlatformOutbox);
    const events: OutboxFixture['events'] = [];
    for (const event of ['queued', 'sent', 'retried', 'failed', 'dead-lettered'] as const) {
      outbox.on(event, (payload) => events.push({ event, payload }));
    }
    return { platform, integration, app, outbox, events, queueName };
  };
}

/** An emulator with a holding proxy in front of it for a test file, started before its tests and closed after them. */
export function usePlatformBehindProxy(): () => { platform: PlatformEmulator; proxy: HoldingProxy } {
  let started: { platform: PlatformEmulator; proxy: HoldingProxy } | undefined;
  beforeAll(async () => {
    const platform = await PlatformEmulator.start();
    started = { platform, proxy: await startHoldingProxy(platform.url) };
  });
  afterAll(async () => {
    await started?.proxy.close();
    await started?.platform.close();
  });
  return () => {
    if (!started) throw new Error('usePlatformBehindProxy(): the platform starts in beforeAll');
    return started;
  };
}
