/**
 * Tenant isolation, proved by a model: fast-check drives random sequences of calls (through each client), evictions,
 * refreshes, 401s, 429 holds, rotations to a next pair and messages through the outbox over tenants whose settings
 * deliberately collide (some hold another's key pairs, next pair included, under a wrong machineId), in two replica
 * processes that share one redis-server. After every step: a call or message that the platform answered carried a
 * token of the integration registered for the tenant that made it (the placeholder API names the token's integration
 * in its answer); a tenant whose settings name another's machineId or certificate never has a call or message
 * answered; a well-configured tenant's message reaches the platform, and a key two tenants both use is two messages;
 * and a failure or hold of one tenant never fails another's call.
 *
 * CI runs a small size. For a larger run: `PLATFORM_AUTH_MODEL_RUNS=50 PLATFORM_AUTH_MODEL_COMMANDS=40 npx vitest run
 * test/tenants/isolation.model.test.ts` (the seed of a failure is printed; `PLATFORM_AUTH_MODEL_SEED` replays it).
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { PlatformAuthOptions } from 'nestjs-platform-auth';
import { createTestCredentials, PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { eventually } from '../support/eventually.js';
import { ChildReplica } from '../support/child-replica.js';
import { useRedisServer } from '../support/redis-server.js';
import { startPlatformJournal, type PlatformJournal } from './platform-journal.js';

type KeySource = NonNullable<PlatformAuthOptions['key']>;
const CHILD = fileURLToPath(new URL('./isolation-replica.child.mjs', import.meta.url));
const RUNS = Number(process.env.PLATFORM_AUTH_MODEL_RUNS ?? 8);
const COMMANDS = Number(process.env.PLATFORM_AUTH_MODEL_COMMANDS ?? 15);
/** Next pairs each well-configured tenant may rotate to in one run: the second rotation promotes the first. */
const ROTATIONS = 2;
const SEED =
  process.env.PLATFORM_AUTH_MODEL_SEED === undefined ? undefined : Number(process.env.PLATFORM_AUTH_MODEL_SEED);

interface CallResult {
  ok: boolean;
  status?: number;
  owner?: string;
  error?: string;
}

const redis = useRedisServer();
let platform: PlatformEmulator;
/** In front of the platform: what it answered to each message, and whose token it found on it. */
let journal: PlatformJournal;
type Owner = 'acme' | 'globex' | 'initech';
const OWNERS: readonly Owner[] = ['acme', 'globex', 'initech'];
let integrations: Record<Owner, EmulatedIntegration>;
/** Each tenant's pairs in the order it rotates to them: its own first, then its next pairs. */
let pairs: Record<Owner, ReadonlyArray<KeySource & { certificate: string }>>;
const replicas: ChildReplica[] = [];

/**
 * The tenants and what each should get. `owner`: the integration whose token its calls must carry; `undefined`:
 * its settings collide with another's (a machineId or a certificate that is not its own), so no call may succeed.
 * Settings follow the rotations done so far (`generation`: how many each well-configured tenant made).
 */
interface TenantCase {
  readonly settings?: (generation: Readonly<Record<Owner, number>>) => PlatformAuthOptions;
  readonly owner?: string;
}
let tenants: Record<string, TenantCase>;

const settingsOf = (
  integration: EmulatedIntegration,
  overrides: Partial<PlatformAuthOptions> = {},
): PlatformAuthOptions => ({
  ...integration.moduleOptions,
  // Through the journal; the audience stays the platform's.
  baseUrl: journal.url,
  audience: platform.audience,
  startupCheck: 'off',
  // Every tenant has a limit, so that a 429 with `Retry-After` holds a bucket in Redis that another could share.
  rateLimit: { requestsPerSecond: 500 },
  // A `Retry-After` past this fails the call at once and holds the tenant's gate instead of waiting it out.
  retry: { maxDelayMs: 200 },
  ...overrides,
});

/** The key settings of `owner` after `generation` rotations: the pair it rotated from, and the next one registered. */
const keysOf = (owner: Owner, generation: number): Pick<PlatformAuthOptions, 'key' | 'next'> =>
  generation === 0 ? { key: pairs[owner][0] } : { key: pairs[owner][generation - 1], next: pairs[owner][generation] };

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  journal = await startPlatformJournal(platform.url);
  integrations = {
    acme: await platform.createIntegration({ name: 'acme' }),
    globex: await platform.createIntegration({ name: 'globex' }),
    initech: await platform.createIntegration({ name: 'initech' }),
  };
  const nextPairs = async (owner: Owner) => {
    const made = [{ ...integrations[owner].moduleOptions.key, certificate: integrations[owner].certificatePem }];
    for (let n = 1; n <= ROTATIONS; n += 1) {
      const next = await createTestCredentials();
      made.push({ privateKey: next.privateKeyPem, certificate: next.certificatePem });
    }
    return made;
  };
  pairs = { acme: await nextPairs('acme'), globex: await nextPairs('globex'), initech: await nextPairs('initech') };
  const { acme, globex, initech } = integrations;
  const own = (owner: Owner) => (generation: Readonly<Record<Owner, number>>) =>
    settingsOf(integrations[owner], keysOf(owner, generation[owner]));
  tenants = {
    acme: { settings: own('acme'), owner: acme.machineId },
    globex: { settings: own('globex'), owner: globex.machineId },
    initech: { settings: own('initech'), owner: initech.machineId },
    // Initech's pairs (its next one too, through its rotations) with acme's machineId: an onboarding typo.
    ACME: {
      settings: (generation) =>
        settingsOf(initech, { ...keysOf('initech', generation.initech), machineId: acme.machineId }),
    },
    // Acme's pairs, next one included, with globex's machineId.
    Globex: {
      settings: (generation) => settingsOf(acme, { ...keysOf('acme', generation.acme), machineId: globex.machineId }),
    },
    // Globex's certificate with initech's machineId and initech's key: a certificate that is not its key's.
    'globex ': {
      settings: () =>
        settingsOf(initech, { key: { ...initech.moduleOptions.key, certificate: globex.certificatePem } }),
    },
    // Ids the resolver does not know.
    ['__proto__']: {},
    '../acme': {},
    'acme\nx-forged: 1': {},
    ['a'.repeat(300)]: {},
  };
  replicas.push(await ChildReplica.spawn(CHILD), await ChildReplica.spawn(CHILD));
});

afterAll(async () => {
  for (const replica of replicas) replica.kill();
  await journal?.close();
  await platform.close();
});

/** The tenants whose settings hold `owner`'s pairs under another machineId: rotated with it. */
const SHARING: Record<Owner, readonly string[]> = { acme: ['Globex'], globex: [], initech: ['ACME'] };

const tenantIds = () => Object.keys(tenants);
const table = (model: Model): Record<string, PlatformAuthOptions> =>
  Object.fromEntries(
    Object.entries(tenants).flatMap(([id, tenant]) =>
      tenant.settings ? [[id, tenant.settings(model.generation)]] : [],
    ),
  );

/**
 * What the model keeps: the integrations whose rate bucket a `Retry-After` may still hold, the rotations each
 * well-configured tenant made, the run's tag (idempotency keys of one run are not another's) and the id `enqueue`
 * gave each tenant's key.
 */
interface Model {
  readonly held: Set<string>;
  readonly generation: Record<Owner, number>;
  readonly run: string;
  readonly ids: Map<string, string>;
}
type Real = readonly ChildReplica[];

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

/** Steps that reached what they are about, over all runs: a call answered after a rotation, a message delivered. */
const exercised = { rotated: 0, delivered: 0 };

/**
 * The tenant rotates to its next pair, as the runbook has it: the application stores the next pair beside the current
 * one and every replica refreshes the tenant (the tenants holding its pairs under another machineId too), then the
 * portal registers the next certificate and the tenant's token is revoked, so its next call exchanges anew: refused
 * as not registered with the current pair, it switches to the next pair within the exchange and stores the token
 * under that pair's namespace. The tenants holding its pairs then call too.
 */
class Rotate implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly replica: number,
    readonly tenant: Owner,
  ) {}
  check = (model: Readonly<Model>) => model.generation[this.tenant] < ROTATIONS;
  async run(model: Model, real: Real): Promise<void> {
    model.generation[this.tenant] += 1;
    await Promise.all(real.map((r) => r.ask('update', { table: table(model) })));
    for (const id of [this.tenant, ...SHARING[this.tenant]]) {
      await Promise.all(real.map((r) => r.ask('refresh', { tenant: id })));
    }
    // A token of the current pair, as a tenant in use has; revoked once the portal step is done.
    const token = await real[this.replica].ask<string | null>('token', { tenant: this.tenant });
    const owner = integrations[this.tenant].machineId;
    platform.replaceCertificate(owner, pairs[this.tenant][model.generation[this.tenant]].certificate);
    if (token) platform.revokeToken(token);
    const result = await real[this.replica].ask<CallResult>('call', { tenant: this.tenant, client: 'fetch' });
    judge(this.tenant, result, model);
    if (result.ok) exercised.rotated += 1;
    // What the switch stored is the tenant's own: those holding its pairs under another machineId get none of it.
    for (const id of SHARING[this.tenant]) {
      for (const r of real) judge(id, await r.ask<CallResult>('call', { tenant: id, client: 'http' }), model);
    }
  }
  toString = () => `rotate(${this.replica}, ${JSON.stringify(this.tenant)})`;
}

/** Every message the platform answered carried a token of the tenant whose message it is. */
function judgeMessages(): void {
  for (const message of journal.messages) {
    if (message.status >= 300) continue;
    const from = (message.body as { from?: string } | undefined)?.from ?? '';
    expect(
      message.machineId,
      `${JSON.stringify(from)}'s message ${JSON.stringify(message.idempotencyKey)} carried its own integration's token`,
    ).toBe(Object.hasOwn(tenants, from) ? tenants[from].owner : undefined);
    expect(message.machineId).toBeDefined();
  }
}

/**
 * One or two tenants enqueue a message each under the same key (a key one tenant already used in the run, often);
 * the step ends once no job is left in the queue (sent, or failed for good), whichever replica's worker took it.
 */
class Enqueue implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly replica: number,
    readonly senders: readonly string[],
    readonly key: string,
  ) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const key = `${model.run}-${this.key}`;
    for (const tenant of this.senders) {
      const result = await real[this.replica].ask<{ id?: string; error?: string }>('enqueue', {
        message: { tenant, method: 'POST', path: '/api/messages', body: { from: tenant, key }, idempotencyKey: key },
      });
      expect(result.error, `${JSON.stringify(tenant)} enqueued ${key}`).toBeUndefined();
      // A key is the tenant's own: another tenant's message under it is another message.
      for (const [sender, id] of model.ids) {
        if (sender.endsWith(`\0${key}`)) expect(sender === `${tenant}\0${key}`).toBe(id === result.id);
      }
      model.ids.set(`${tenant}\0${key}`, result.id!);
    }
    await eventually(async () => expect(await real[0].ask<boolean>('idle')).toBe(true));
    judgeMessages();
    for (const tenant of this.senders) {
      if (tenants[tenant].owner === undefined) continue;
      const delivered = journal.messages.some(
        (message) =>
          message.status < 300 &&
          message.idempotencyKey === key &&
          (message.body as { from?: string } | undefined)?.from === tenant,
      );
      expect(delivered, `${JSON.stringify(tenant)}'s message ${key} reached the platform`).toBe(true);
      exercised.delivered += 1;
    }
  }
  toString = () => `enqueue(${this.replica}, ${JSON.stringify(this.senders)}, ${this.key})`;
}

it('every answered call carries its own tenant’s token, and no tenant’s failure or hold reaches another', async () => {
  const replica = fc.integer({ min: 0, max: 1 });
  // The colliding pair half the time: a collision only shows when both sides act in one sequence.
  const tenant = fc.oneof(
    { weight: 1, arbitrary: fc.constantFrom('acme', 'ACME', 'initech', 'Globex') },
    { weight: 1, arbitrary: fc.constantFrom(...tenantIds()) },
  );
  const commands = [
    fc.tuple(replica, tenant, fc.constantFrom('http' as const, 'fetch' as const)).map(([r, t, c]) => new Call(r, t, c)),
    fc.tuple(replica, tenant).map(([r, t]) => new Throttle(r, t)),
    fc.tuple(replica, tenant).map(([r, t]) => new Revoke(r, t)),
    fc
      .tuple(replica, tenant, fc.constantFrom('evict' as const, 'refresh' as const))
      .map(([r, t, h]) => new Evict(r, t, h)),
    fc.tuple(replica, fc.constantFrom(...OWNERS)).map(([r, t]) => new Rotate(r, t)),
    // Two keys for all, often two tenants at once: the same key under two tenants comes up in most runs.
    fc
      .tuple(replica, fc.uniqueArray(tenant, { minLength: 1, maxLength: 2 }), fc.constantFrom('invoice-1', 'invoice-2'))
      .map(([r, t, k]) => new Enqueue(r, t, k)),
  ];
  await fc.assert(fc.asyncProperty(fc.commands(commands, { maxCommands: COMMANDS }), runSequence), {
    numRuns: RUNS,
    seed: SEED,
    endOnFailure: true,
  });
  // Random sequences reach a rotation and a delivery in most runs, not in all: one sequence that does, every time.
  await runSequence([
    new Call(1, 'ACME', 'http'),
    new Rotate(0, 'acme'),
    new Enqueue(1, ['acme', 'ACME'], 'invoice-1'),
    new Call(0, 'Globex', 'fetch'),
  ]);
  // The model exercised what it is about: calls that the platform answered.
  expect(platform.counters.apiCalls.ok).toBeGreaterThan(0);
  expect(exercised.rotated).toBeGreaterThan(0);
  expect(exercised.delivered).toBeGreaterThan(0);
});

/** One sequence of steps, from fresh registries in both replicas on entries of the run's own. */
async function runSequence(sequence: Iterable<fc.AsyncCommand<Model, Real>>): Promise<void> {
  // Each run on entries of its own, in fresh registries: what one run stored or held is not there for the next.
  const run = randomBytes(4).toString('hex');
  const tokenStore = {
    url: redis().url,
    encryptionKey: randomBytes(32).toString('hex'),
    keyPrefix: `model-${run}:`,
    operationTimeoutMs: 5_000,
    lockTtlMs: 10_000,
    waitTimeoutMs: 20_000,
  };
  const outbox = {
    connection: { url: redis().url },
    queueName: `model-${run}`,
    worker: { concurrency: 2 },
    // Short back-offs: a held tenant's message goes once the hold (at most 200 ms) ends, a refused one fails soon.
    retry: { attempts: 8, delayMs: 20, maxDelayMs: 100 },
    enqueueTimeoutMs: 20_000,
  };
  const model: Model = { held: new Set(), generation: { acme: 0, globex: 0, initech: 0 }, run, ids: new Map() };
  // The platform as before any rotation: each integration's own certificate registered.
  for (const owner of OWNERS)
    platform.replaceCertificate(integrations[owner].machineId, integrations[owner].certificatePem);
  journal.clear();
  await Promise.all(replicas.map((r) => r.ask('start', { table: table(model), tokenStore, outbox })));
  try {
    await fc.asyncModelRun(() => ({ model, real: replicas }), sequence);
  } finally {
    await Promise.all(replicas.map((r) => r.ask('stop')));
  }
}
