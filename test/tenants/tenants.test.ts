import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Test, type TestingModule } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  NoCurrentTenantError,
  PLATFORM_AUTH_DIAGNOSTICS_CHANNEL,
  PlatformAuthModule,
  PlatformTenantConfigError,
  PlatformTenantHttpService,
  PlatformTenants,
  TenantResolutionError,
  TokenExchangeError,
  UnknownTenantError,
  type PlatformAuthOptions,
  type PlatformTenantsOptions,
} from 'nestjs-platform-auth';
import {
  createTestCertificates,
  FakeClock,
  PlatformEmulator,
  type TestCertificates,
} from 'nestjs-platform-auth/testing';
import { TerminusModule } from '@nestjs/terminus';
import { PlatformAuthHealthIndicator } from 'nestjs-platform-auth/terminus';
import { CapturingLogger } from '../support/capturing-logger.js';
import { installOtelMemory } from '../support/otel-memory.js';
import { TELEMETRY_NAMES } from '../../lib/telemetry/telemetry.events.js';
import { tenantOptions } from '../../lib/tenants/tenant.builder.js';
import { emulatedTenant } from './tenants-kit.js';

// Many more integrations than any test asks for, so a tenant is found among others; test/emulator/bulk-integrations
// proves the registry at thousands.
const TENANTS = 200;
const clock = new FakeClock(Date.now());
let platform: PlatformEmulator;
let certificates: TestCertificates;

beforeAll(async () => {
  certificates = await createTestCertificates(TENANTS, { now: clock.now() });
  platform = await PlatformEmulator.start({ now: () => clock.now() });
  platform.registerIntegrations(
    certificates.certificatePems.map((certificatePem, index) => ({ certificatePem, machineId: `machine-${index}` })),
  );
});

afterAll(() => platform.close());

function tenantSettings(tenantId: string): PlatformAuthOptions | undefined {
  return emulatedTenant(platform.url, certificates, tenantId);
}

let moduleRef: TestingModule | undefined;
afterEach(async () => {
  await moduleRef?.close();
  moduleRef = undefined;
});

async function registry(
  options: Partial<PlatformTenantsOptions> = {},
): Promise<{ tenants: PlatformTenants; http: PlatformTenantHttpService; calls: string[] }> {
  const calls: string[] = [];
  moduleRef = await Test.createTestingModule({
    imports: [
      PlatformAuthModule.forTenants({
        clock,
        logger: new CapturingLogger(),
        resolve: (tenantId) => {
          calls.push(tenantId);
          return Promise.resolve(tenantSettings(tenantId));
        },
        ...options,
      }),
    ],
  }).compile();
  await moduleRef.init();
  return { tenants: moduleRef.get(PlatformTenants), http: moduleRef.get(PlatformTenantHttpService), calls };
}

/** What `promise` rejected with; fails the test when it resolved. */
async function rejection<E>(promise: Promise<unknown>): Promise<E> {
  return promise.then(
    () => expect.unreachable('resolved'),
    (error: unknown) => error as E,
  );
}

const billingOf = async (tenants: PlatformTenants, tenantId: string) =>
  (await firstValueFrom((await tenants.get(tenantId)).http.get<{ machineId: string }>('/api/billing'))).data.machineId;

describe('PlatformAuthModule.forTenants', () => {
  it("attaches each tenant's token to its own requests only, on a shared platform URL", async () => {
    const { tenants } = await registry();
    const ids = ['t0', 't1', 't199', 't7'];
    const answered = await Promise.all(ids.flatMap((id) => [billingOf(tenants, id), billingOf(tenants, id)]));
    expect(answered).toEqual(ids.flatMap((id) => [`machine-${id.slice(1)}`, `machine-${id.slice(1)}`]));
    const tokens = await Promise.all(ids.map(async (id) => (await tenants.get(id)).tokens.getAccessToken()));
    expect(new Set(tokens).size).toBe(ids.length);
    expect(tenants.status()).toMatchObject({ resident: 4, maxResident: 1_000, evictions: 0, resolverFailures: 0 });
    expect(tenants.status().byState.valid).toBe(4);
  });

  it("each tenant's fetch carries that tenant's token only", async () => {
    const { tenants } = await registry();
    const fetchBilling = async (tenantId: string) => {
      const response = await (await tenants.get(tenantId)).fetch.fetch('/api/billing');
      return ((await response.json()) as { machineId: string }).machineId;
    };
    expect(await Promise.all(['t2', 't11', 't2'].map(fetchBilling))).toEqual(['machine-2', 'machine-11', 'machine-2']);
  });

  it('resolves a tenant once however many callers wait for it', async () => {
    const { tenants, calls } = await registry();
    const got = await Promise.all(Array.from({ length: 50 }, () => tenants.get('t3')));
    expect(new Set(got).size).toBe(1);
    expect(calls).toEqual(['t3']);
  });

  it('sends as the current tenant inside run(), and refuses outside a tenant context', async () => {
    const { tenants, http } = await registry();
    const inside = await tenants.run('t5', () => firstValueFrom(http.get<{ machineId: string }>('/api/billing')));
    expect(inside.data.machineId).toBe('machine-5');
    const nested = await tenants.run('t6', async () => {
      await Promise.resolve();
      return firstValueFrom(http.get<{ machineId: string }>('/api/billing'));
    });
    expect(nested.data.machineId).toBe('machine-6');
    expect(() => http.get('/api/billing')).toThrow(NoCurrentTenantError);
  });

  it('evicts the least recently used past maxResident, and an evicted tenant comes back on its next get', async () => {
    const { tenants, calls } = await registry({ maxResident: 2 });
    await billingOf(tenants, 't10');
    await billingOf(tenants, 't11');
    await tenants.get('t10');
    await billingOf(tenants, 't12');
    expect(tenants.status()).toMatchObject({ resident: 2, evictions: 1 });
    expect(calls).toEqual(['t10', 't11', 't12']);
    expect(await billingOf(tenants, 't11')).toBe('machine-11');
    expect(calls).toEqual(['t10', 't11', 't12', 't11']);
    expect(tenants.status()).toMatchObject({ resident: 2, evictions: 2 });
  });

  it('evicts a tenant idle for idleTimeoutMs, stopping its HTTP client', async () => {
    const { tenants } = await registry({ idleTimeoutMs: 60_000 });
    const first = await tenants.get('t20');
    await billingOf(tenants, 't21');
    clock.advance(30_000);
    await tenants.get('t21');
    clock.advance(30_000);
    expect(tenants.status()).toMatchObject({ resident: 1, evictions: 1 });
    expect(first.tokens.status().state).toBe('shutdown');
    expect(await billingOf(tenants, 't20')).toBe('machine-20');
  });

  it('answers UnknownTenantError for a tenant the resolver does not know, asking again each time', async () => {
    const { tenants, calls } = await registry();
    await expect(tenants.get('nobody')).rejects.toThrow(UnknownTenantError);
    await expect(tenants.get('nobody')).rejects.toThrow("Unknown tenant 'nobody'");
    expect(calls).toEqual(['nobody', 'nobody']);
    expect(tenants.status().resident).toBe(0);
  });

  it('reports every problem of a bad tenant at once, naming it and quoting no key, while others work', async () => {
    const { tenants } = await registry({
      resolve: (tenantId) =>
        Promise.resolve(
          tenantId === 'bad'
            ? {
                baseUrl: 'ftp://x',
                machineId: '',
                key: { privateKey: certificates.certificatePems[0], certificate: 'junk' },
              }
            : tenantSettings(tenantId),
        ),
    });
    const error = await rejection<PlatformTenantConfigError>(tenants.get('bad'));
    expect(error).toBeInstanceOf(PlatformTenantConfigError);
    expect(error.tenantId).toBe('bad');
    expect(error.problems.length).toBeGreaterThanOrEqual(3);
    expect(error.message).toMatch(/^Invalid settings of tenant 'bad' \(\d+ problems\)/);
    expect(JSON.stringify(error) + error.message).not.toContain('MII');
    expect(await billingOf(tenants, 't30')).toBe('machine-30');
  });

  it("shares a throwing resolver's failure for a back-off of 1 s doubling to 30 s, without delaying others", async () => {
    let failing = true;
    const calls: string[] = [];
    const { tenants } = await registry({
      resolve: (tenantId) => {
        calls.push(tenantId);
        if (tenantId === 't40' && failing) return Promise.reject(new Error('database down: password=hunter2'));
        return Promise.resolve(tenantSettings(tenantId));
      },
    });
    const first = await rejection<TenantResolutionError>(tenants.get('t40'));
    expect(first).toBeInstanceOf(TenantResolutionError);
    expect(first.retryAt.getTime()).toBe(clock.now() + 1_000);
    expect(JSON.stringify(first) + first.message).not.toContain('hunter2');
    expect(await rejection(tenants.get('t40'))).toBe(first);
    expect(await billingOf(tenants, 't41')).toBe('machine-41');
    const backoffs: number[] = [];
    for (let failure = 2; failure <= 7; failure += 1) {
      clock.advance(Math.max(...[1_000, ...backoffs]));
      const error = await rejection<TenantResolutionError>(tenants.get('t40'));
      backoffs.push(error.retryAt.getTime() - clock.now());
    }
    expect(backoffs).toEqual([2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(calls.filter((id) => id === 't40')).toHaveLength(7);
    expect(tenants.status().resolverFailures).toBe(7);
    failing = false;
    clock.advance(30_000);
    expect(await billingOf(tenants, 't40')).toBe('machine-40');
  });

  it("keeps one tenant's refusal to itself: the others get tokens while it is refused and backs off", async () => {
    platform.setIntegrationStatus('machine-50', 'Disabled');
    try {
      const { tenants } = await registry();
      const refused = await tenants.get('t50');
      const [failure, others] = await Promise.all([
        rejection<TokenExchangeError>(refused.tokens.getAccessToken()),
        Promise.all(['t51', 't52'].map((id) => billingOf(tenants, id))),
      ]);
      expect(failure).toBeInstanceOf(TokenExchangeError);
      expect(others).toEqual(['machine-51', 'machine-52']);
      expect(refused.tokens.status().state).toBe('backoff');
      expect(await billingOf(tenants, 't53')).toBe('machine-53');
      expect(tenants.status().byState).toMatchObject({ backoff: 1, valid: 3 });
    } finally {
      platform.setIntegrationStatus('machine-50', 'Active');
    }
  });

  it("labels every tenant's telemetry with the registry, never a tenant's id or machineId", async () => {
    const otel = installOtelMemory();
    const events: Record<string, unknown>[] = [];
    const onEvent = (event: unknown) => events.push(event as Record<string, unknown>);
    subscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, onEvent);
    try {
      const { tenants } = await registry({ name: 'customers' });
      for (const id of ['t60', 't61', 't62']) await billingOf(tenants, id);
      const points = (await otel.collect()).get(TELEMETRY_NAMES.exchanges)!.dataPoints;
      expect(points.reduce((sum, point) => sum + (point.value as number), 0)).toBe(3);
      expect(points.map((point) => point.attributes['platform_auth.integration.name'])).toEqual(['customers']);
      expect(JSON.stringify(points)).not.toMatch(/t6\d|machine-6\d/);
      const spans = otel.spans.getFinishedSpans();
      expect(spans.filter((span) => span.name === TELEMETRY_NAMES.exchangeSpan)).toHaveLength(3);
      expect(JSON.stringify(spans.map((span) => span.attributes))).not.toMatch(/t6\d|machine-6\d/);
    } finally {
      unsubscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, onEvent);
      await otel.close();
    }
    expect(events.filter((event) => event.event === 'exchange:end')).toHaveLength(3);
    expect(new Set(events.map((event) => event.integration)).size).toBe(1);
    expect(JSON.stringify(events)).not.toMatch(/t6\d|machine-6\d/);
  });

  it("puts a tenant's id on spans only when turned on, and on metrics only for the tenants listed", async () => {
    const otel = installOtelMemory();
    try {
      const { tenants } = await registry({
        name: 'customers',
        telemetry: { tenantIdInSpans: true, tenantIdInMetrics: ['t65'] },
      });
      for (const id of ['t65', 't66', 't67']) await billingOf(tenants, id);
      const spans = otel.spans.getFinishedSpans().filter((span) => span.name === TELEMETRY_NAMES.exchangeSpan);
      expect(spans.map((span) => span.attributes['platform_auth.tenant.id'])).toEqual(['t65', 't66', 't67']);
      const points = (await otel.collect()).get(TELEMETRY_NAMES.exchanges)!.dataPoints;
      const series = points.map((point) => [point.attributes['platform_auth.tenant.id'], point.value]);
      expect(series).toEqual(
        expect.arrayContaining([
          ['t65', 1],
          [undefined, 2],
        ]),
      );
      expect(series).toHaveLength(2);
      expect(JSON.stringify(points)).not.toMatch(/t6[67]/);
    } finally {
      await otel.close();
    }
  });

  it('takes its options from a factory with forTenantsAsync', async () => {
    moduleRef = await Test.createTestingModule({
      imports: [
        PlatformAuthModule.forTenantsAsync({
          useFactory: () => ({
            clock,
            logger: new CapturingLogger(),
            maxResident: 5,
            resolve: (tenantId: string) => Promise.resolve(tenantSettings(tenantId)),
          }),
        }),
      ],
    }).compile();
    const tenants = moduleRef.get(PlatformTenants);
    expect(await billingOf(tenants, 't70')).toBe('machine-70');
    expect(tenants.status().maxResident).toBe(5);
  });

  it('refuses registry options that cannot work, every problem at once', async () => {
    await expect(
      Test.createTestingModule({
        imports: [
          PlatformAuthModule.forTenants({
            resolve: undefined as never,
            name: 'Bad Name',
            maxResident: 0,
            idleTimeoutMs: 5,
            telemetry: { tenantIdInSpans: 'yes' as never, tenantIdInMetrics: [''] },
          }),
        ],
      }).compile(),
    ).rejects.toThrow(
      /\(6 problems\)[\s\S]*resolve[\s\S]*name[\s\S]*maxResident[\s\S]*idleTimeoutMs[\s\S]*tenantIdInSpans[\s\S]*tenantIdInMetrics/,
    );
  });

  it('reports health as one aggregate of counts, down only when the registry cannot work', async () => {
    platform.setIntegrationStatus('machine-80', 'Disabled');
    try {
      moduleRef = await Test.createTestingModule({
        imports: [
          TerminusModule,
          PlatformAuthModule.forTenants({
            clock,
            logger: new CapturingLogger(),
            resolve: (tenantId) => Promise.resolve(tenantSettings(tenantId)),
          }),
        ],
        providers: [PlatformAuthHealthIndicator],
      }).compile();
      const tenants = moduleRef.get(PlatformTenants);
      await billingOf(tenants, 't81');
      await rejection((await tenants.get('t80')).tokens.getAccessToken());
      const health = moduleRef.get(PlatformAuthHealthIndicator);
      const up = health.isTenantsHealthy();
      expect(up).toEqual({
        'platform-auth-tenants': expect.objectContaining({ status: 'up', resident: 2, closed: false }) as unknown,
      });
      expect(up['platform-auth-tenants'].byState).toMatchObject({ valid: 1, backoff: 1 });
      expect(JSON.stringify(up)).not.toMatch(/t8\d|machine-8\d/);
      await tenants.onApplicationShutdown();
      expect(health.isTenantsHealthy('tenants')).toEqual({
        tenants: expect.objectContaining({ status: 'down', message: 'the tenant registry is shut down' }) as unknown,
      });
    } finally {
      platform.setIntegrationStatus('machine-80', 'Active');
    }
  });

  it('applies the shared retry policy to every tenant', async () => {
    const { tenants } = await registry({ retry: { maxAttempts: 1 } });
    const { http } = await tenants.get('t9');
    await (await tenants.get('t9')).tokens.getAccessToken();
    const before = platform.counters.apiCalls.total;
    platform.injectFault({ kind: 'status', status: 503 }, 'api');
    const answer = await firstValueFrom(http.get('/api/billing', { validateStatus: () => true }));
    expect(answer.status).toBe(503);
    expect(platform.counters.apiCalls.total - before).toBe(1);
  });

  it("lays a tenant's settings over the shared ones, a group of options merged one level deep", () => {
    const logger = new CapturingLogger();
    const merged = tenantOptions(
      { clock, logger, exchange: { timeoutMs: 5_000 }, tokenStore: { lockTtlMs: 10_000, waitTimeoutMs: 20_000 } },
      {
        baseUrl: 'https://a.example',
        machineId: 'm',
        exchange: { timeoutMs: 7_000 },
        tokenStore: { lockTtlMs: 3_000 },
      },
    );
    expect(merged).toEqual({
      clock,
      logger,
      baseUrl: 'https://a.example',
      machineId: 'm',
      exchange: { timeoutMs: 7_000 },
      tokenStore: { lockTtlMs: 3_000, waitTimeoutMs: 20_000 },
    });
    expect(merged.clock).toBe(clock);
  });
});
