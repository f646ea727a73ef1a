import 'reflect-metadata';
import { get } from 'node:http';
import { connect } from 'node:net';
import { Controller, Get, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { PlatformAuthModule, PlatformHttpService, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { CapturingLogger } from '../support/capturing-logger.js';
import { eventually } from '../support/eventually.js';
import { startHoldingProxy } from '../support/holding-proxy.js';

@Controller()
class BillingController {
  constructor(private readonly http: PlatformHttpService) {}

  @Get('billing')
  async billing(): Promise<unknown> {
    return (await firstValueFrom(this.http.get('/api/billing'))).status;
  }
}

/** One GET on its own connection, closed after the answer: no keep-alive socket holds the server's drain open. */
function getOnce(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false, headers: { Connection: 'close' } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

/** Whether a server accepts a new connection at `url`'s host and port. */
function accepts(url: URL): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close()));
});

async function platform(): Promise<{ emulator: PlatformEmulator; integration: EmulatedIntegration }> {
  const emulator = await PlatformEmulator.start();
  closing.push(() => emulator.close());
  return { emulator, integration: await emulator.createIntegration() };
}

async function createApp(options: PlatformAuthOptions): Promise<{ app: INestApplication; logger: CapturingLogger }> {
  @Module({ imports: [PlatformAuthModule.forRoot(options)], controllers: [BillingController] })
  class AppModule {}
  const logger = new CapturingLogger();
  const app = await NestFactory.create(AppModule, new ExpressAdapter(), { logger });
  return { app, logger };
}

describe('graceful shutdown', () => {
  it.each([
    ['a platform call', 'api'],
    ['a token exchange', 'token'],
  ] as const)('lets %s in flight during the drain complete', async (_name, target) => {
    const { emulator, integration } = await platform();
    // The app reaches the platform through a proxy that holds its request until the drain has begun.
    const proxy = await startHoldingProxy(emulator.url);
    closing.push(() => proxy.close());
    const { app, logger } = await createApp({
      ...integration.moduleOptions,
      baseUrl: proxy.url,
      audience: emulator.audience,
      // No token at boot: for 'token', the exchange itself is the request in flight during the drain.
      startupCheck: 'off',
    });
    await app.listen(0, '127.0.0.1');
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    if (target === 'api') expect((await getOnce(`${url}/billing`)).status).toBe(200);

    // With a token in hand the next platform request is the API call; without one, the token exchange.
    const held = proxy.holdNext();
    const inFlight = getOnce(`${url}/billing`);
    await held.arrived;
    const closed = app.close();
    // The drain has begun once the app's server refuses new connections; only then may the request go on.
    await eventually(async () => expect(await accepts(new URL(url))).toBe(false));
    held.release();

    expect(await inFlight).toEqual({ status: 200, body: '200' });
    await closed;
    expect(logger.messages('warn')).toEqual([]);
    expect(logger.messages('error')).toEqual([]);
  });
});
