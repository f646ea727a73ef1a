import { Test, type TestingModule } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  PlatformAuthModule,
  PlatformTenants,
  TenantReleasedError,
  TenantResolutionError,
  UnknownTenantError,
  type PlatformTenant,
  type PlatformAuthOptions,
  type PlatformTenantsOptions,
} from 'nestjs-platform-auth';
import {
  createTestCertificates,
  FakeClock,
  PlatformEmulator,
  type TestCertificates,
} from 'nestjs-platform-auth/testing';
import { CapturingLogger } from '../support/capturing-logger.js';
import { eventually } from '../support/eventually.js';
import { startHoldingProxy, type HoldingProxy } from '../support/holding-proxy.js';
import { emulatedTenant } from './tenants-kit.js';

const TENANTS = 20;
const clock = new FakeClock(Date.now());
let platform: PlatformEmulator;
let certificates: TestCertificates;
let proxy: HoldingProxy;

beforeAll(async () => {
  certificates = await createTestCertificates(TENANTS, { now: clock.now() });
  platform = await PlatformEmulator.start({ now: () => clock.now() });
  platform.registerIntegrations(
    certificates.certificatePems.map((certificatePem, index) => ({ certificatePem, machineId: `machine-${index}` })),
  );
  proxy = await startHoldingProxy(platform.url);
});

afterAll(async () => {
  await proxy.close();
  await platform.close();
});

let moduleRef: TestingModule | undefined;
afterEach(async () => {
  await moduleRef?.close();
  moduleRef = undefined;
});

/** Tenant `t<n>` of the emulator, reached through the holding proxy so that a test can hold an answer. */
function tenantSettings(tenantId: string): PlatformAuthOptions | undefined {
  const own = emulatedTenant(platform.url, certificates, tenantId);
  return own && { ...own, baseUrl: proxy.url, audience: new URL(platform.url).host };
}

type Resolve = PlatformTenantsOptions['resolve'];

async function registry(
  options: Partial<PlatformTenantsOptions> = {},
): Promise<{ tenants: PlatformTenants; calls: string[]; logger: CapturingLogger }> {
  const calls: string[] = [];
  const logger = new CapturingLogger();
  const resolve: Resolve = options.resolve ?? ((tenantId) => Promise.resolve(tenantSettings(tenantId)));
  moduleRef = await Test.createTestingModule({
    imports: [
      PlatformAuthModule.forTenants({
        clock,
        logger,
        ...options,
        resolve: (tenantId) => {
          calls.push(tenantId);
          return resolve(tenantId);
        },
      }),
    ],
  }).compile();
  await moduleRef.init();
  return { tenants: moduleRef.get(PlatformTenants), calls, logger };
}

/** What `promise` rejected with; fails the test when it resolved. */
async function rejection<E>(promise: Promise<unknown>): Promise<E> {
  return promise.then(
    () => expect.unreachable('resolved'),
    (error: unknown) => error as E,
  );
}

const billingOf = async (tenant: PlatformTenant) =>
  (await firstValueFrom(tenant.http.get<{ machineId: string }>('/api/billing'))).data.machineId;

/** A resolver's answer the test gives when it chooses: a gate, never a delay. */
function gatedResolver(): { resolve: Resolve; open: (tenantId: string) => void; asked: Set<string> } {
  const gates = new Map<string, () => void>();
  const asked = new Set<string>();
  return {
    asked,
    resolve: (tenantId) =>
      new Promise((settle) => {
        asked.add(tenantId);
        gates.set(tenantId, () => settle(tenantSettings(tenantId)));
      }),
    open: (tenantId) => gates.get(tenantId)!(),
  };
}

describe('the tenant registry under hostile input', () => {
  it('keeps resident tenants resident through a flood of ids the resolver does not know', async () => {
    const { tenants, calls } = await registry({ maxResident: 2 });
    expect(await billingOf(await tenants.get('t0'))).toBe('machine-0');
    expect(await billingOf(await tenants.get('t1'))).toBe('machine-1');
    const exchanges = platform.counters.exchanges.total;

    const flood = Array.from({ length: 4 }, (_, index) => `made-up-${index}`);
    const refused = await Promise.all(flood.map((id) => rejection(tenants.get(id))));
    expect(refused.every((error) => error instanceof UnknownTenantError)).toBe(true);

    expect(tenants.status()).toMatchObject({ resident: 2, resolving: 0, evictions: 0 });
    expect(await billingOf(await tenants.get('t0'))).toBe('machine-0');
    expect(await billingOf(await tenants.get('t1'))).toBe('machine-1');
    expect(platform.counters.exchanges.total - exchanges).toBe(0);
    expect(calls.filter((id) => id.startsWith('t'))).toEqual(['t0', 't1']);
  });

  it('releases the callers of a resolver that never answers after resolveTimeoutMs, then backs off', async () => {
    const { tenants, calls } = await registry({
      resolveTimeoutMs: 5_000,
      resolve: (tenantId) =>
        tenantId === 'hang' ? new Promise(() => undefined) : Promise.resolve(tenantSettings(tenantId)),
    });
    const waiting = [tenants.get('hang'), tenants.get('hang')];
    await eventually(() => expect(calls).toEqual(['hang']));
    expect(tenants.status().resolving).toBe(1);
    clock.advance(4_999);
    expect(await billingOf(await tenants.get('t2'))).toBe('machine-2');
    clock.advance(1);

    const [first, second] = await Promise.all(waiting.map((promise) => rejection<TenantResolutionError>(promise)));
    expect(second).toBe(first);
    expect(first).toBeInstanceOf(TenantResolutionError);
    expect(first.timedOut).toBe(true);
    expect(first.cause).toBeUndefined();
    expect(first.message).toMatch(/^Resolving tenant 'hang' failed \(no answer within 5000 ms\)/);
    expect(first.retryAfterMs).toBe(1_000);
    expect(await rejection(tenants.get('hang'))).toBe(first);
    expect(tenants.status()).toMatchObject({ resolving: 0, resolverFailures: 1, resident: 1 });
  });

  it('releases every waiter at once, with TenantReleasedError, on evict, refresh and shutdown', async () => {
    const { tenants, calls } = await registry({ resolve: () => new Promise(() => undefined) });

    const evicted = [tenants.get('t3'), tenants.get('t3')];
    await eventually(() => expect(calls).toHaveLength(1));
    expect(await tenants.evict('t3')).toBe(true);
    for (const error of await Promise.all(evicted.map((promise) => rejection<TenantReleasedError>(promise)))) {
      expect(error).toBeInstanceOf(TenantReleasedError);
      expect(error).toMatchObject({ tenantId: 't3', reason: 'evicted', code: 'PLATFORM_AUTH_TENANT_RELEASED' });
    }

    const refreshed = tenants.get('t4');
    await eventually(() => expect(calls).toHaveLength(2));
    const again = tenants.refresh('t4');
    expect(await rejection(refreshed)).toMatchObject({ tenantId: 't4', reason: 'evicted' });
    await eventually(() => expect(calls).toHaveLength(3));

    const waiting = tenants.get('t5');
    await eventually(() => expect(calls).toHaveLength(4));
    await tenants.onApplicationShutdown();
    expect(await rejection(waiting)).toMatchObject({ tenantId: 't5', reason: 'shutdown' });
    expect(await rejection(again)).toMatchObject({ tenantId: 't4', reason: 'shutdown' });
    expect(await rejection(tenants.get('t6'))).toBeInstanceOf(TenantReleasedError);
    expect(tenants.status()).toMatchObject({ resident: 0, resolving: 0, closed: true });
  });

  it('never hands out a tenant that was evicted while it was being built', async () => {
    const gated = gatedResolver();
    const built: { tenants?: PlatformTenants } = {};
    const { tenants, calls } = await registry({
      resolve: (tenantId) =>
        tenantId !== 't8'
          ? gated.resolve(tenantId)
          : // Evicted while its settings are read, after the resolver answered: the build is under way.
            Promise.resolve({
              ...tenantSettings(tenantId)!,
              get machineId() {
                void built.tenants!.evict(tenantId);
                return 'machine-8';
              },
            }),
    });
    built.tenants = tenants;

    // Evicted while the resolver is asked.
    const whileResolving = tenants.get('t7');
    await eventually(() => expect(gated.asked.has('t7')).toBe(true));
    await tenants.evict('t7');
    gated.open('t7');
    expect(await rejection(whileResolving)).toBeInstanceOf(TenantReleasedError);

    const duringBuild = await rejection(tenants.get('t8'));
    expect(duringBuild).toMatchObject({ tenantId: 't8', reason: 'evicted' });
    expect(tenants.status()).toMatchObject({ resident: 0, resolving: 0 });

    // Asked again, it is built anew and works.
    const fresh = tenants.get('t7');
    await eventually(() => expect(calls.filter((id) => id === 't7')).toHaveLength(2));
    gated.open('t7');
    const tenant = await fresh;
    expect(tenant.tokens.status().state).not.toBe('shutdown');
    expect(await billingOf(tenant)).toBe('machine-7');
  });

  it('lets a POST in flight finish when its tenant is evicted, and takes no new call on the evicted tenant', async () => {
    const { tenants } = await registry({ drainTimeoutMs: 60_000 });
    const tenant = await tenants.get('t9');
    await tenant.tokens.getAccessToken();
    const held = proxy.holdNextAnswer();
    const sending = firstValueFrom(tenant.http.post<{ accepted?: boolean }>('/api/messages', { text: 'hello' }));
    await held.arrived;

    const evicting = tenants.evict('t9');
    expect(await rejection(firstValueFrom(tenant.http.get('/api/billing')))).toMatchObject({
      tenantId: 't9',
      reason: 'evicted',
    });
    expect(await rejection(tenant.fetch.fetch('/api/billing'))).toBeInstanceOf(TenantReleasedError);
    expect(tenant.tokens.status().state).not.toBe('shutdown');
    held.release();
    const answer = await sending;
    expect(answer.status).toBeLessThan(300);
    await evicting;
    expect(tenant.tokens.status().state).toBe('shutdown');
    expect(tenants.status()).toMatchObject({ resident: 0, evictions: 1 });
  });

  it("counts an evicted tenant's form posts like its other calls: one in flight is let finish, a new one refused", async () => {
    const { tenants } = await registry({ drainTimeoutMs: 60_000 });
    const tenant = await tenants.get('t13');
    await tenant.tokens.getAccessToken();
    const held = proxy.holdNextAnswer();
    const sending = firstValueFrom(tenant.http.postForm('/api/messages', { text: 'hello' }, { validateStatus: null }));
    await held.arrived;

    const evicting = tenants.evict('t13');
    for (const send of [tenant.http.postForm, tenant.http.putForm, tenant.http.patchForm])
      expect(await rejection(firstValueFrom(send.call(tenant.http, '/api/messages', { text: 'late' })))).toMatchObject({
        tenantId: 't13',
        reason: 'evicted',
      });
    expect(tenant.tokens.status().state).not.toBe('shutdown');
    held.release();
    expect((await sending).status).toBeGreaterThan(0);
    await evicting;
    expect(tenant.tokens.status().state).toBe('shutdown');
  });

  it("counts an evicted tenant's calls through axiosRef by any method and through its undici dispatcher, and refuses them after it stopped", async () => {
    const { tenants } = await registry({ drainTimeoutMs: 60_000 });
    const tenant = await tenants.get('t14');
    await tenant.tokens.getAccessToken();
    const held = proxy.holdNextAnswer();
    const sending = fetch(`${proxy.url}/api/billing`, { dispatcher: tenant.fetch.dispatcher });
    await held.arrived;

    const evicting = tenants.evict('t14');
    const axiosRef = tenant.http.axiosRef;
    const refusals = [
      axiosRef.get('/api/billing'),
      axiosRef.post('/api/messages', { text: 'late' }),
      axiosRef({ url: '/api/billing' }),
      // fetch rejects with its own TypeError; what the dispatcher failed with is its cause.
      fetch(`${proxy.url}/api/billing`, { dispatcher: tenant.fetch.dispatcher }).catch((error: Error) => {
        throw error.cause;
      }),
    ];
    for (const refused of refusals)
      expect(await rejection(refused)).toMatchObject({
        name: 'TenantReleasedError',
        tenantId: 't14',
        reason: 'evicted',
      });
    expect(tenant.tokens.status().state).not.toBe('shutdown');
    held.release();
    expect((await sending).status).toBe(200);
    await evicting;
    expect(tenant.tokens.status().state).toBe('shutdown');
    // Stopped, its instance still refuses rather than send without a token.
    expect(await rejection(axiosRef.get('/api/billing'))).toBeInstanceOf(TenantReleasedError);
    expect(await rejection(firstValueFrom(tenant.http.get('/api/billing')))).toBeInstanceOf(TenantReleasedError);
  });

  it("cuts an evicted tenant's call that outlasts drainTimeoutMs", async () => {
    const { tenants } = await registry({ drainTimeoutMs: 10_000 });
    const tenant = await tenants.get('t10');
    await tenant.tokens.getAccessToken();
    const held = proxy.holdNextAnswer();
    const sending = firstValueFrom(tenant.http.get('/api/billing'));
    await held.arrived;
    const evicting = tenants.evict('t10');
    clock.advance(10_000);
    await evicting;
    expect(tenant.tokens.status().state).toBe('shutdown');
    held.release();
    await expect(sending).rejects.toThrow();
  });

  it('does not evict a tenant as idle while its own long call is in flight', async () => {
    const { tenants } = await registry({ idleTimeoutMs: 60_000 });
    const tenant = await tenants.get('t11');
    await tenant.tokens.getAccessToken();
    const held = proxy.holdNextAnswer();
    const sending = firstValueFrom(tenant.http.post('/api/messages', { text: 'long' }));
    await held.arrived;
    clock.advance(60_000);
    await tenants.get('t12');
    expect(tenants.status()).toMatchObject({ resident: 2, evictions: 0 });
    held.release();
    expect((await sending).status).toBeLessThan(300);
    // Idle once its call is answered: the next sweep evicts it (and t12, idle as long).
    clock.advance(60_000);
    await tenants.get('t12');
    expect(tenant.tokens.status().state).toBe('shutdown');
  });

  it("escapes and bounds a resolver error's name and a tenant id in every message, and trusts neither", async () => {
    const hostile = new Error(`password=hunter2 ${'x'.repeat(10_000)}`);
    hostile.name = 'Evil\n[Nest] 1 - ERROR forged line password=hunter2';
    const { tenants, logger } = await registry({
      resolve: (tenantId) => (tenantId.startsWith('boom') ? Promise.reject(hostile) : Promise.resolve(undefined)),
    });
    const failed = await rejection<TenantResolutionError>(tenants.get('boom'));
    expect(failed).toBeInstanceOf(TenantResolutionError);
    expect(failed.message).toMatch(/^Resolving tenant 'boom' failed \(Error\); the resolver is asked again from /);
    expect(failed.cause).toBe(hostile);

    const thrown = await rejection<TenantResolutionError>(tenants.get('boom\n[Nest] 1 - ERROR forged\u001b[31m'));
    expect(thrown.message).toContain("tenant 'boom\\x0a[Nest] 1 - ERROR forged\\x1b[31m' failed");

    const long = `t${'\u202e'.repeat(5_000)}`;
    const unknown = await rejection<UnknownTenantError>(tenants.get(long));
    expect(unknown.tenantId).toBe(long);
    expect(unknown.message).toMatch(/^Unknown tenant 't(\\u202e){63}…': /);

    for (const error of [failed, thrown, unknown]) {
      // eslint-disable-next-line no-control-regex -- control characters are what must not be there
      expect(error.message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
      expect(`${error.message}${JSON.stringify(error)}`).not.toContain('hunter2');
      expect(error.message.length).toBeLessThan(500);
    }
    expect(logger.lines.map((line) => line.message).join('')).not.toContain('hunter2');
  });
});
