import { Readable } from 'node:stream';
import { inspect } from 'node:util';
import { ConsoleLogger } from '@nestjs/common';
import axios, { AxiosError, isCancel, type AxiosResponse } from 'axios';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it, vi } from 'vitest';
import { PlatformAuthInterceptor } from 'nestjs-platform-auth';
import { REDACTED } from '../../lib/util/remote-text.util.js';
import { eventually } from '../support/eventually.js';
import { usePlatformFixtures } from '../support/platform-fixture.js';

const start = usePlatformFixtures();

async function failure(promise: Promise<unknown>): Promise<AxiosError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AxiosError);
  return error as AxiosError;
}

describe('authenticated HttpService', () => {
  it('ends a call whose signal aborts while it waits to be re-sent as axios ends a cancelled request', async () => {
    const f = await start({ autoAdvance: false });
    await f.tokens.getAccessToken();
    f.platform.injectFault({ kind: 'status', status: 503, headers: { 'Retry-After': '5' } }, 'api');
    const controller = new AbortController();
    const call = f.http.axiosRef.get('/api/billing', { signal: controller.signal }).catch((e: unknown) => e);
    // Parked on the clock, which this fixture moves only when told: the abort comes during the wait.
    await eventually(() => expect(f.clock.sleeps).toContain(5_000));
    controller.abort();
    expect(isCancel(await call)).toBe(true);
    expect(f.platform.counters.apiCalls.total).toBe(1);
  });

  it('ends a call waiting to be re-sent when the application shuts down, with the shutdown error', async () => {
    const f = await start({ autoAdvance: false });
    await f.tokens.getAccessToken();
    f.platform.injectFault({ kind: 'status', status: 503, headers: { 'Retry-After': '5' } }, 'api');
    const call = f.http.axiosRef.get('/api/billing').catch((e: unknown) => e);
    await eventually(() => expect(f.clock.sleeps).toContain(5_000));
    await f.moduleRef.close();
    expect(await call).toMatchObject({ name: 'TokenExchangeError', reason: 'aborted' });
    expect(f.clock.pendingSleeps).toBe(0);
    expect(f.platform.counters.apiCalls.total).toBe(1);
  });

  it('sends the bearer token to the platform base URL', async () => {
    const f = await start();
    const response = await firstValueFrom(f.http.post('/api/messages', { to: 'someone', text: 'hello' }));
    expect(response.status).toBeLessThan(300);
    expect(f.platform.counters.apiCalls.ok).toBe(1);
    expect(f.http.axiosRef.defaults.baseURL).toBe(f.platform.url);
  });

  it('on a 401 renews once and re-sends once', async () => {
    const f = await start();
    await firstValueFrom(f.http.get('/api/billing'));
    f.platform.revokeAllTokens();
    const response = await firstValueFrom(f.http.get('/api/billing'));
    expect(response.status).toBe(200);
    expect(f.platform.counters.exchanges.accepted).toBe(2);
    expect(f.platform.counters.apiCalls).toMatchObject({ ok: 2, unauthorized: 1 });
  });

  it('returns a second 401 to the caller, redacted', async () => {
    const f = await start();
    f.platform.injectFault({ kind: 'status', status: 401, body: { error: 'invalid_token' } }, 'api');
    f.platform.injectFault({ kind: 'status', status: 401, body: { error: 'invalid_token' } }, 'api');
    const error = await failure(firstValueFrom(f.http.get('/api/billing')));
    expect(error.response?.status).toBe(401);
    expect(f.platform.counters.exchanges.accepted).toBe(2);
    expect(error.config?.headers.Authorization).toBe(`Bearer ${REDACTED}`);
  });

  it('does not retry a 403', async () => {
    const f = await start();
    f.platform.setPermissions(f.integration.machineId, ['Send message']);
    const error = await failure(firstValueFrom(f.http.get('/api/billing')));
    expect(error.response?.status).toBe(403);
    expect(f.platform.counters.exchanges.accepted).toBe(1);
    expect(f.platform.counters.apiCalls.forbidden).toBe(1);
  });

  it('does not re-send a stream body after a 401', async () => {
    const f = await start();
    await f.tokens.getAccessToken();
    f.platform.revokeAllTokens();
    const body = Readable.from([Buffer.from('{"text":"streamed"}')]);
    const error = await failure(
      firstValueFrom(f.http.post('/api/messages', body, { headers: { 'Content-Type': 'application/json' } })),
    );
    expect(error.response?.status).toBe(401);
    expect(f.platform.counters.apiCalls.total).toBe(1);
    expect(f.platform.counters.exchanges.accepted).toBe(1);
  });

  it('turns 500 concurrent 401s into one renewal', async () => {
    const f = await start();
    await f.tokens.getAccessToken();
    f.platform.revokeAllTokens();
    const responses = await Promise.all(Array.from({ length: 500 }, () => firstValueFrom(f.http.get('/api/billing'))));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    expect(f.platform.counters.exchanges.accepted).toBe(2);
    expect(f.platform.counters.apiCalls).toMatchObject({ unauthorized: 500, ok: 500 });
  });

  it('leaves a caller-set Authorization header alone', async () => {
    const f = await start();
    const error = await failure(
      firstValueFrom(f.http.get('/api/billing', { headers: { Authorization: 'Bearer mine' } })),
    );
    expect(error.response?.status).toBe(401);
    expect(error.config?.headers.Authorization).toBe('Bearer mine');
    expect(f.platform.counters.exchanges.total).toBe(0);
  });
});

describe('attaching the interceptor elsewhere', () => {
  it('can be attached to any axios instance, once, and detached', async () => {
    const f = await start();
    const interceptor = f.moduleRef.get(PlatformAuthInterceptor);
    const instance = axios.create();
    const detach = interceptor.attach(instance);
    interceptor.attach(instance);
    const response: AxiosResponse = await instance.get(`${f.platform.url}/api/billing`);
    expect(response.status).toBe(200);
    detach();
    const error = await failure(instance.get(`${f.platform.url}/api/billing`));
    expect(error.response?.status).toBe(401);
    expect(f.platform.counters.exchanges.total).toBe(1);
  });
});

describe('redaction', () => {
  it('keeps the token out of JSON, inspect, toString and Nest logs of errors that reach the caller', async () => {
    const f = await start();
    const token = await f.tokens.getAccessToken();
    f.platform.injectFault({ kind: 'status', status: 401 }, 'api');
    f.platform.injectFault({ kind: 'status', status: 401 }, 'api');
    const unauthorized = await failure(firstValueFrom(f.http.get('/api/billing')));
    const secondToken = await f.tokens.getAccessToken();
    f.platform.injectFault({ kind: 'status', status: 500 }, 'api');
    const serverError = await failure(firstValueFrom(f.http.post('/api/messages', { x: 1 })));

    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    const stdoutSpy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    try {
      const logger = new ConsoleLogger('Sweep');
      for (const error of [unauthorized, serverError]) {
        logger.error(error);
        logger.error(error.message, error.stack);
        logger.warn(error.toJSON());
      }
    } finally {
      spy.mockRestore();
      stdoutSpy.mockRestore();
    }
    const renderings = [unauthorized, serverError].flatMap((error) => [
      JSON.stringify(error),
      inspect(error, { depth: 10 }),
      inspect(error, { depth: 10, showHidden: true }),
      String(error),
      error.stack ?? '',
    ]);
    renderings.push(written.join('\n'));
    expect(written.length).toBeGreaterThan(0);
    for (const text of renderings) {
      expect(text).not.toContain(token);
      expect(text).not.toContain(secondToken);
    }
    expect(renderings.join('\n')).toContain(`Bearer ${REDACTED}`);
  });
});
