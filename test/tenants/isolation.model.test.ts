/**
 * Tenant isolation, proved by a model: fast-check drives random sequences of calls (through each client), evictions,
 * refreshes, 401s and 429 holds over tenants whose settings deliberately collide, in two replica processes that share
 * one redis-server. After every step: a call that the platform answered 200 carried a token of the integration
 * registered for the tenant that made it (the placeholder API names the token's integration in its answer); a tenant
 * whose settings name another's machineId or certificate never has a call answered; and a failure or hold of one
 * tenant never fails another's call.
 *
 * CI runs a small size. For a larger run: `PLATFORM_AUTH_MODEL_RUNS=50 PLATFORM_AUTH_MODEL_COMMANDS=40 npx vitest run
 * test/tenants/isolation.model.test.ts` (the seed of a failure is printed; `PLATFORM_AUTH_MODEL_SEED` replays it).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { PlatformAuthOptions } from 'nestjs-platform-auth';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { useRedisServer } from '../support/redis-server.js';

const CHILD = fileURLToPath(new URL('./isolation-replica.child.mjs', import.meta.url));
const RUNS = Number(process.env.PLATFORM_AUTH_MODEL_RUNS ?? 8);
const COMMANDS = Number(process.env.PLATFORM_AUTH_MODEL_COMMANDS ?? 15);
const SEED =
  process.env.PLATFORM_AUTH_MODEL_SEED === undefined ? undefined : Number(process.env.PLATFORM_AUTH_MODEL_SEED);

interface CallResult {
  ok: boolean;
  status?: number;
  owner?: string;
  error?: string;
}

/** A replica process: a `forTenants` registry on the built package, driven over IPC. */
class Replica {
  private nextId = 0;
  private readonly pending = new Map<number, (result: unknown) => void>();

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (message: { id?: number; result?: unknown }) => {
      if (message.id === undefined) return;
      this.pending.get(message.id)?.(message.result);
      this.pending.delete(message.id);
    });
  }

  static async spawn(): Promise<Replica> {
    const child = fork(CHILD, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`replica process exited (${code}) while starting`)));
    });
    return new Replica(child);
  }

  ask<T>(command: string, args: Record<string, unknown> = {}): Promise<T> {
    const id = (this.nextId += 1);
    return new Promise<T>((resolve) => {
      this.pending.set(id, resolve as (result: unknown) => void);
      this.child.send({ id, command, ...args });
    });
  }

  kill(): void {
    this.child.kill();
  }
}

const redis = useRedisServer();
let platform: PlatformEmulator;
let integrations: Record<'acme' | 'globex' | 'initech', EmulatedIntegration>;
const replicas: Replica[] = [];

/**
 * The tenants and what each should get. `owner`: the integration whose token its calls must carry; `undefined`:
 * its settings collide with another's (a machineId or a certificate that is not its own), so no call may succeed.
 */
interface TenantCase {
  readonly settings?: PlatformAuthOptions;
  readonly owner?: string;
}
let tenants: Record<string, TenantCase>;

const settingsOf = (
  integration: EmulatedIntegration,
  overrides: Partial<PlatformAuthOptions> = {},
): PlatformAuthOptions => ({
  ...integration.moduleOptions,
  startupCheck: 'off',
  // Every tenant has a limit, so that a 429 with `Retry-After` holds a bucket in Redis that another could share.
  rateLimit: { requestsPerSecond: 500 },
  // A `Retry-After` past this fails the call at once and holds the tenant's gate instead of waiting it out.
  retry: { maxDelayMs: 200 },
  ...overrides,
});

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  integrations = {
    acme: await platform.createIntegration({ name: 'acme' }),
    globex: await platform.createIntegration({ name: 'globex' }),
    initech: await platform.createIntegration({ name: 'initech' }),
  };
  const { acme, globex, initech } = integrations;
  tenants = {
    acme: { settings: settingsOf(acme), owner: acme.machineId },
    globex: { settings: settingsOf(globex), owner: globex.machineId },
    initech: { settings: settingsOf(initech), owner: initech.machineId },
    // Initech's key and certificate with acme's machineId: an onboarding typo.
    ACME: { settings: settingsOf(initech, { machineId: acme.machineId }) },
    // Globex's certificate with initech's machineId and initech's key: a certificate that is not its key's.
    'globex ': {
      settings: settingsOf(initech, { key: { ...initech.moduleOptions.key, certificate: globex.certificatePem } }),
    },
    // Ids the resolver does not know.
    ['__proto__']: {},
    '../acme': {},
    'acme\nx-forged: 1': {},
    ['a'.repeat(300)]: {},
  };
  replicas.push(await Replica.spawn(), await Replica.spawn());
});

afterAll(async () => {
  for (const replica of replicas) replica.kill();
  await platform.close();
});

const tenantIds = () => Object.keys(tenants);
const table = (): Record<string, PlatformAuthOptions> =>
  Object.fromEntries(
    Object.entries(tenants).flatMap(([id, tenant]) => (tenant.settings ? [[id, tenant.settings]] : [])),
  );

/** What the model keeps: the integrations whose rate bucket a `Retry-After` may still hold. */
interface Model {
  readonly held: Set<string>;
}
type Real = readonly Replica[];

/** A call's outcome must be what the tenant's settings allow, and carry only its own integration's token. */
function judge(tenant: string, result: CallResult, model: Model): void {
  const expected = tenants[tenant];
  if (expected.owner === undefined) {
    expect(result.ok, `${JSON.stringify(tenant)} has no call answered`).toBe(false);
    return;
  }
  if (result.ok) {
    expect(result.owner, `${JSON.stringify(tenant)}'s call carried its own integration's token`).toBe(expected.owner);
  } else {
    // Only a hold of its own integration may fail a well-configured tenant's call.
    expect(model.held.has(expected.owner), `${JSON.stringify(tenant)} failed (${result.error ?? result.status})`).toBe(
      true,
    );
  }
}

class Call implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly replica: number,
    readonly tenant: string,
    readonly client: 'http' | 'fetch',
  ) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    judge(
      this.tenant,
      await real[this.replica].ask<CallResult>('call', { tenant: this.tenant, client: this.client }),
      model,
    );
  }
  toString = () => `call(${this.replica}, ${JSON.stringify(this.tenant)}, ${this.client})`;
}

/** The platform answers the tenant's next request 429 with a `Retry-After` far past `maxDelayMs`. */
class Throttle implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly replica: number,
    readonly tenant: string,
  ) {}
  // The fault answers the next API request, whoever sends it: only for a tenant whose call will reach the platform.
  check = (model: Readonly<Model>) => {
    const owner = tenants[this.tenant].owner;
    return owner !== undefined && !model.held.has(owner);
  };
  async run(model: Model, real: Real): Promise<void> {
    platform.injectFault({ kind: 'retry-after', status: 429, retryAfter: 30 }, 'api');
    const result = await real[this.replica].ask<CallResult>('call', { tenant: this.tenant, client: 'fetch' });
    model.held.add(tenants[this.tenant].owner!);
    expect(result.ok).toBe(false);
    expect(platform.counters.apiCalls.throttled).toBeGreaterThan(0);
  }
  toString = () => `throttle(${this.replica}, ${JSON.stringify(this.tenant)})`;
}

/** The platform revokes the tenant's current token: its next request is answered 401, then renewed and re-sent. */
class Revoke implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly replica: number,
    readonly tenant: string,
  ) {}
  check = () => tenants[this.tenant].owner !== undefined;
  async run(model: Model, real: Real): Promise<void> {
    const token = await real[this.replica].ask<string | null>('token', { tenant: this.tenant });
    if (token) platform.revokeToken(token);
    judge(
      this.tenant,
      await real[this.replica].ask<CallResult>('call', { tenant: this.tenant, client: 'http' }),
      model,
    );
  }
  toString = () => `revoke(${this.replica}, ${JSON.stringify(this.tenant)})`;
}

class Evict implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly replica: number,
    readonly tenant: string,
    readonly how: 'evict' | 'refresh',
  ) {}
  check = () => true;
  async run(_model: Model, real: Real): Promise<void> {
    await real[this.replica].ask(this.how, { tenant: this.tenant });
  }
  toString = () => `${this.how}(${this.replica}, ${JSON.stringify(this.tenant)})`;
}

it('every answered call carries its own tenant’s token, and no tenant’s failure or hold reaches another', async () => {
  const replica = fc.integer({ min: 0, max: 1 });
  // The colliding pair half the time: a collision only shows when both sides act in one sequence.
  const tenant = fc.oneof(
    { weight: 1, arbitrary: fc.constantFrom('acme', 'ACME') },
    { weight: 1, arbitrary: fc.constantFrom(...tenantIds()) },
  );
  const commands = [
    fc.tuple(replica, tenant, fc.constantFrom('http' as const, 'fetch' as const)).map(([r, t, c]) => new Call(r, t, c)),
    fc.tuple(replica, tenant).map(([r, t]) => new Throttle(r, t)),
    fc.tuple(replica, tenant).map(([r, t]) => new Revoke(r, t)),
    fc
      .tuple(replica, tenant, fc.constantFrom('evict' as const, 'refresh' as const))
      .map(([r, t, h]) => new Evict(r, t, h)),
  ];
  await fc.assert(
    fc.asyncProperty(fc.commands(commands, { maxCommands: COMMANDS }), async (sequence) => {
      // Each run on entries of its own, in fresh registries: what one run stored or held is not there for the next.
      const tokenStore = {
        url: redis().url,
        encryptionKey: randomBytes(32).toString('hex'),
        keyPrefix: `model-${randomBytes(4).toString('hex')}:`,
        operationTimeoutMs: 5_000,
        lockTtlMs: 10_000,
        waitTimeoutMs: 20_000,
      };
      await Promise.all(replicas.map((r) => r.ask('start', { table: table(), tokenStore })));
      try {
        await fc.asyncModelRun(() => ({ model: { held: new Set<string>() }, real: replicas }), sequence);
      } finally {
        await Promise.all(replicas.map((r) => r.ask('stop')));
      }
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  // The model exercised what it is about: calls that the platform answered.
  expect(platform.counters.apiCalls.ok).toBeGreaterThan(0);
});
