import { createPrivateKey } from 'node:crypto';
import { Test } from '@nestjs/testing';
import { getResponse } from 'msw';
import { firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { PlatformAuthConfigError, PlatformAuthModule, PlatformFetch, PlatformHttpService } from 'nestjs-platform-auth';
import {
  createTestCredentials,
  FakeClock,
  PlatformEmulator,
  type PlatformEmulatorOptions,
} from 'nestjs-platform-auth/testing';
import { createPlatformHandlers } from 'nestjs-platform-auth/testing/msw';
import { eventually } from '../support/eventually.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { MSW_BASE_URL, useMswServer } from '../support/msw-server.js';
import { usePlatformFixtures } from '../support/platform-fixture.js';
import { AssertionFactory, readTokenResponse, type AssertionParts, type TokenResponse } from './emulator-test-kit.js';

const msw = useMswServer();
const startFixture = usePlatformFixtures();
const start = () => startFixture({ msw });

const emulators: PlatformEmulator[] = [];
afterEach(async () => {
  await Promise.all(emulators.splice(0).map((emulator) => emulator.close()));
});

/** An emulator whose `aud` is `MSW_BASE_URL`'s host, with its handlers in place: a test's whole set-up. */
async function emulatorBehindMsw(options: PlatformEmulatorOptions = {}): Promise<PlatformEmulator> {
  const emulator = await PlatformEmulator.start({ audience: new URL(MSW_BASE_URL).host, ...options });
  emulators.push(emulator);
  msw.use(...createPlatformHandlers(emulator, { baseUrl: MSW_BASE_URL }));
  return emulator;
}

/** A gate a test opens: what a `delay` fault waits on instead of a timer. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe('the module against the emulator through its MSW handlers', () => {
  it('exchanges a token at https://platform.test and calls through PlatformHttpService and PlatformFetch, as the journal and counters show', async () => {
    const emulator = await emulatorBehindMsw();
    const integration = await emulator.createIntegration();
    const moduleRef = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRoot({ ...integration.moduleOptions, baseUrl: MSW_BASE_URL })],
    }).compile();
    await moduleRef.init();
    try {
      const viaAxios = await firstValueFrom(moduleRef.get(PlatformHttpService).get('/api/billing'));
      const viaFetch = await moduleRef.get(PlatformFetch).fetch('/api/billing');
      expect(viaAxios.status).toBe(200);
      expect(viaAxios.data).toMatchObject({ machineId: integration.machineId, placeholder: true });
      expect(viaFetch.status).toBe(200);
      expect(await viaFetch.json()).toMatchObject({ machineId: integration.machineId });
      expect(emulator.journal).toEqual([
        expect.objectContaining({
          verdict: 'accepted',
          machineId: integration.machineId,
          claims: expect.objectContaining({ aud: 'platform.test', sub: integration.machineId }),
        }),
      ]);
      expect(emulator.counters.exchanges).toEqual({ total: 1, accepted: 1, rejected: 0, faulted: 0 });
      expect(emulator.counters.apiCalls).toMatchObject({ total: 2, ok: 2, unauthorized: 0 });
    } finally {
      await moduleRef.close();
    }
  });

  it('a 401 from the API: one renewal and one re-send, for PlatformHttpService and PlatformFetch', async () => {
    const f = await start();
    for (const call of [
      async () => (await firstValueFrom(f.moduleRef.get(PlatformHttpService).get('/api/billing'))).status,
      async () => (await f.moduleRef.get(PlatformFetch).fetch('/api/billing')).status,
    ]) {
      await f.tokens.getAccessToken();
      const before = f.platform.counters;
      f.platform.injectFault({ kind: 'status', status: 401, body: { error: 'invalid_token' } }, 'api');
      expect(await call()).toBe(200);
      const after = f.platform.counters;
      expect(after.exchanges.accepted - before.exchanges.accepted).toBe(1);
      expect(after.apiCalls.total - before.apiCalls.total).toBe(2);
      expect(after.apiCalls.faulted - before.apiCalls.faulted).toBe(1);
    }
    const jtis = f.platform.journal.map((entry) => entry.claims?.jti);
    expect(jtis).toHaveLength(3);
    expect(new Set(jtis).size).toBe(3);
  });

  it('a 503 at the token endpoint is retried within the exchange, and one on the API re-sent', async () => {
    const f = await start();
    f.platform.injectFault({ kind: 'status', status: 503 }, 'token');
    f.platform.injectFault({ kind: 'status', status: 503 }, 'api');
    expect((await f.moduleRef.get(PlatformFetch).fetch('/api/billing')).status).toBe(200);
    expect(f.platform.journal.map(({ verdict, status }) => ({ verdict, status }))).toEqual([
      { verdict: 'fault', status: 503 },
      { verdict: 'accepted', status: 200 },
    ]);
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 2, faulted: 1, ok: 1 });
  });

  it('a dropped connection is a network error: retried at the token endpoint, the caller’s error without retry', async () => {
    const f = await start();
    f.platform.injectFault({ kind: 'drop' }, 'token');
    const token = await f.tokens.getAccessToken();
    expect(f.platform.journal.map(({ verdict, fault, status }) => ({ verdict, fault, status }))).toEqual([
      { verdict: 'fault', fault: 'drop', status: 0 },
      { verdict: 'accepted', fault: undefined, status: 200 },
    ]);
    f.platform.injectFault({ kind: 'drop' }, 'api');
    f.platform.injectFault({ kind: 'drop' }, 'api');
    const viaAxios = firstValueFrom(f.moduleRef.get(PlatformHttpService).get('/api/billing', { retry: false }));
    await expect(viaAxios).rejects.toMatchObject({ message: expect.stringMatching(/network error/i) });
    const viaFetch = f.moduleRef.get(PlatformFetch).fetch('/api/billing', { retry: false });
    await expect(viaFetch).rejects.toThrow(TypeError);
    expectNoSecrets(await viaAxios.catch((error: unknown) => error), [token]);
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 2, faulted: 2, ok: 0 });
  });

  it('a delay fault waits on the delay the handlers were given, and the request is handled only after it', async () => {
    const f = await start();
    const delays: number[] = [];
    const held = gate();
    msw.use(
      ...createPlatformHandlers(f.platform, {
        baseUrl: f.url,
        delay: (ms) => {
          delays.push(ms);
          return held.promise;
        },
      }),
    );
    await f.tokens.getAccessToken();
    f.platform.injectFault({ kind: 'delay', ms: 45_000 }, 'api');
    const call = f.moduleRef.get(PlatformFetch).fetch('/api/billing');
    await eventually(() => expect(delays).toEqual([45_000]));
    expect(f.platform.counters.apiCalls.total).toBe(0);
    held.open();
    expect((await call).status).toBe(200);
    expect(f.platform.counters.apiCalls).toMatchObject({ total: 1, ok: 1, faulted: 0 });
  });

  it('close() ends a delayed or hanging request with a network error, and refuses every request after it', async () => {
    const f = await start();
    const delays: number[] = [];
    msw.use(
      ...createPlatformHandlers(f.platform, {
        baseUrl: f.url,
        delay: (ms) => {
          delays.push(ms);
          return new Promise(() => {});
        },
      }),
    );
    await f.tokens.getAccessToken();
    const fetch = f.moduleRef.get(PlatformFetch).fetch;
    f.platform.injectFault({ kind: 'delay', ms: 1_000 }, 'api');
    f.platform.injectFault({ kind: 'hang' }, 'api');
    const delayed = fetch('/api/billing', { retry: false }).then(
      () => 'answered',
      () => 'network error',
    );
    const hanging = fetch('/api/billing', { retry: false }).then(
      () => 'answered',
      () => 'network error',
    );
    await eventually(() => {
      expect(delays).toEqual([1_000]);
      expect(f.platform.counters.apiCalls.total).toBe(1);
    });
    await f.platform.close();
    expect(await delayed).toBe('network error');
    expect(await hanging).toBe('network error');
    await expect(fetch('/api/billing', { retry: false })).rejects.toThrow(TypeError);
  });
});

/**
 * What a client can tell two answers apart by: status, body (an access token as such, each is new) and every header
 * but those of the connection.
 */
function comparable({ status, headers, body }: TokenResponse) {
  const connection = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);
  return {
    status,
    body: typeof body.access_token === 'string' ? { ...body, access_token: '(a token)' } : body,
    headers: Object.fromEntries([...headers].filter(([name]) => !connection.has(name))),
  };
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('the handlers run the emulator itself, not a copy of it', () => {
  it('answer every request as the emulator’s own server does, and share its state', async () => {
    // A clock that stands still: error descriptions name the platform's time.
    const clock = new FakeClock(Date.now());
    const emulator = await emulatorBehindMsw({ now: () => clock.now() });
    const integration = await emulator.createIntegration();
    const assertions = new AssertionFactory(integration.privateKeyPem, integration, emulator.audience);
    const tokenForm = async (parts: Partial<AssertionParts> = {}) =>
      new URLSearchParams({
        grant_type: 'clientcertificate',
        client_id: 'clientcertificate',
        token: await assertions.sign({ nowMs: clock.now(), ...parts }),
      });
    const token = '/loginservice/connect/token';
    const requests: [string, () => Promise<RequestInit>][] = [
      [token, async () => ({ method: 'POST', body: await tokenForm() })],
      [token, async () => ({ method: 'POST', body: await tokenForm({ claims: { aud: 'elsewhere.example' } }) })],
      [token, async () => ({ method: 'POST', body: await tokenForm({ nowMs: clock.now() - 3_600_000 }) })],
      [
        token,
        async () => ({
          method: 'POST',
          body: await tokenForm({ key: createPrivateKey((await createTestCredentials()).privateKeyPem) }),
        }),
      ],
      [
        token,
        async () => ({ method: 'POST', headers: FORM, body: 'grant_type=clientcertificate&grant_type=x&token=t' }),
      ],
      [token, async () => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })],
      [
        token,
        async () => ({
          method: 'POST',
          headers: { 'content-type': `${FORM['content-type']}; charset=latin1` },
          body: 'a=b',
        }),
      ],
      [token, async () => ({ method: 'POST', headers: FORM, body: `token=${'x'.repeat(70_000)}` })],
      [token, async () => ({ method: 'GET' })],
      [token, async () => ({ method: 'HEAD' })],
      ['/api/billing', async () => ({})],
      ['/api/billing', async () => ({ headers: { authorization: 'Bearer not-a-token' } })],
      ['/api/messages', async () => ({ method: 'GET' })],
      ['/api/billing', async () => ({ method: 'HEAD' })],
      ['/api/nowhere?x=1', async () => ({})],
    ];
    const socket: unknown[] = [];
    const handlers: unknown[] = [];
    for (const [path, init] of requests) {
      socket.push(comparable(await readTokenResponse(await fetch(emulator.url + path, await init()))));
      handlers.push(comparable(await readTokenResponse(await fetch(MSW_BASE_URL + path, await init()))));
    }
    expect(handlers).toEqual(socket);
    expect(socket.map((answer) => (answer as { status: number }).status)).toEqual([
      200, 400, 400, 400, 400, 400, 400, 400, 405, 405, 401, 401, 405, 405, 404,
    ]);
    expect(emulator.counters.exchanges).toEqual({ total: 18, accepted: 2, rejected: 16, faulted: 0 });

    // One emulator behind both: an assertion used through the handlers is a replay over the socket, and a token
    // issued over the socket is good through the handlers.
    const once = await tokenForm();
    const first = await fetch(MSW_BASE_URL + token, { method: 'POST', body: once });
    const replayed = await readTokenResponse(await fetch(emulator.tokenUrl, { method: 'POST', body: once }));
    expect(first.status).toBe(200);
    expect(replayed).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(emulator.journal.at(-1)).toMatchObject({ verdict: 'rejected', rule: 'jti-replay' });
    const issued = await readTokenResponse(await fetch(emulator.tokenUrl, { method: 'POST', body: await tokenForm() }));
    const billing = await fetch(MSW_BASE_URL + '/api/billing', {
      headers: { authorization: `Bearer ${issued.body.access_token as string}` },
    });
    expect(billing.status).toBe(200);
  });

  it('answer only baseUrl’s origin: another scheme, host or port passes them by', async () => {
    const emulator = await PlatformEmulator.start();
    emulators.push(emulator);
    const handlers = createPlatformHandlers(emulator, { baseUrl: 'https://platform.test' });
    expect(await getResponse(handlers, new Request('https://platform.test/api/billing'))).toMatchObject({
      status: 401,
    });
    for (const url of [
      'http://platform.test/api/billing',
      'https://other.test/api/billing',
      'https://platform.test:8443/api/billing',
    ])
      expect(await getResponse(handlers, new Request(url))).toBeUndefined();
    expect(emulator.counters.apiCalls.total).toBe(1);
  });

  it('refuse a base URL the module would refuse, and anything but an emulator, with a typed error', async () => {
    const emulator = await PlatformEmulator.start();
    emulators.push(emulator);
    const problems = (make: () => unknown) => {
      try {
        make();
      } catch (error) {
        expect(error).toBeInstanceOf(PlatformAuthConfigError);
        return (error as PlatformAuthConfigError).problems.map(({ option, message }) => `${option}: ${message}`);
      }
      throw new Error('no error');
    };
    expect(problems(() => createPlatformHandlers(emulator, { baseUrl: 'http://platform.test' }))).toEqual([
      expect.stringMatching(/^baseUrl: 'http:\/\/platform\.test' uses http: off loopback/),
    ]);
    expect(problems(() => createPlatformHandlers(emulator, { baseUrl: 'https://platform.test/api' }))).toEqual([
      expect.stringMatching(/^baseUrl: has the path '\/api'/),
    ]);
    expect(
      problems(() =>
        createPlatformHandlers({ url: 'https://platform.test' } as unknown as PlatformEmulator, { baseUrl: 'nope' }),
      ),
    ).toEqual([
      'emulator: is not a PlatformEmulator: pass the one PlatformEmulator.start() resolved to',
      "baseUrl: 'nope' is not an absolute URL",
    ]);
    expect(createPlatformHandlers(emulator, { baseUrl: emulator.url })).toHaveLength(1);
  });
});
