import { Test, type TestingModule } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CredentialRotationError,
  PlatformAuthModule,
  PlatformTenants,
  TokenExchangeError,
  type PlatformAuthOptions,
} from 'nestjs-platform-auth';
import { createTestCredentials, PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { CapturingLogger } from '../support/capturing-logger.js';

let platform: PlatformEmulator;
let refused: EmulatedIntegration;
let working: EmulatedIntegration;
/** An id a request could carry: a line break, a quote and more than 64 characters. */
const HOSTILE = `acme'\nx-forged: 1 ${'a'.repeat(80)}`;
const HOSTILE_QUOTED = `'acme\\'\\x0ax-forged: 1 ${'a'.repeat(46)}…'`;

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  refused = await platform.createIntegration({ name: 'refused' });
  working = await platform.createIntegration({ name: 'working' });
  platform.setIntegrationStatus(refused.machineId, 'Disabled');
});

afterAll(() => platform.close());

let moduleRef: TestingModule | undefined;
afterEach(async () => {
  await moduleRef?.close();
  moduleRef = undefined;
});

async function registry(table: Record<string, EmulatedIntegration>): Promise<PlatformTenants> {
  moduleRef = await Test.createTestingModule({
    imports: [
      PlatformAuthModule.forTenants({
        logger: new CapturingLogger(),
        resolve: (tenantId) =>
          Promise.resolve<PlatformAuthOptions | undefined>(
            Object.hasOwn(table, tenantId) ? { ...table[tenantId].moduleOptions, startupCheck: 'off' } : undefined,
          ),
      }),
    ],
  }).compile();
  await moduleRef.init();
  return moduleRef.get(PlatformTenants);
}

/** What `promise` rejected with; fails the test when it resolved. */
async function rejection<E>(promise: Promise<unknown>): Promise<E> {
  return promise.then(
    () => expect.unreachable('resolved'),
    (error: unknown) => error as E,
  );
}

/** The error names `tenantId` in its field, its message, its first stack line and its JSON, once. */
function expectNamed(error: Error & { tenantId?: string }, tenantId: string, quoted: string): void {
  expect(error.tenantId).toBe(tenantId);
  expect(error.message.startsWith(`Tenant ${quoted}: `)).toBe(true);
  expect(error.message.split('Tenant ').length).toBe(2);
  expect(error.stack?.split('\n')[0]).toBe(`${error.name}: ${error.message}`);
  expect(JSON.parse(JSON.stringify(error))).toMatchObject({ tenantId, message: error.message });
}

describe("a tenant's token provider errors", () => {
  it('name the tenant when getAccessToken or getToken fails, and again in the back-off that follows', async () => {
    const tenants = await registry({ acme: refused, other: working });
    const acme = await tenants.get('acme');
    const failed = await rejection<TokenExchangeError>(acme.tokens.getAccessToken());
    expect(failed).toBeInstanceOf(TokenExchangeError);
    expect(failed.reason).not.toBe('backoff');
    expectNamed(failed, 'acme', "'acme'");
    const backoff = await rejection<TokenExchangeError>(acme.tokens.getToken());
    expect(backoff).toBeInstanceOf(TokenExchangeError);
    expectNamed(backoff, 'acme', "'acme'");
    // The other tenant's provider is not touched.
    expect(typeof (await (await tenants.get('other')).tokens.getAccessToken())).toBe('string');
  });

  it('name the tenant, escaped and bounded, through its http and fetch clients too', async () => {
    const tenants = await registry({ [HOSTILE]: refused });
    const tenant = await tenants.get(HOSTILE);
    const viaHttp = await rejection<TokenExchangeError>(firstValueFrom(tenant.http.get('/api/billing')));
    expect(viaHttp).toBeInstanceOf(TokenExchangeError);
    expectNamed(viaHttp, HOSTILE, HOSTILE_QUOTED);
    const viaFetch = await rejection<TokenExchangeError>(tenant.fetch.fetch('/api/billing'));
    expect(viaFetch).toBeInstanceOf(TokenExchangeError);
    expectNamed(viaFetch, HOSTILE, HOSTILE_QUOTED);
    expect(viaFetch.message).not.toContain('\n');
  });

  it('name each tenant alone when two fail at once', async () => {
    const tenants = await registry({ one: refused, two: refused });
    const [one, two] = await Promise.all([tenants.get('one'), tenants.get('two')]);
    const errors = await Promise.all([
      rejection<TokenExchangeError>(one.tokens.getAccessToken()),
      rejection<TokenExchangeError>(one.tokens.getAccessToken()),
      rejection<TokenExchangeError>(two.tokens.getAccessToken()),
    ]);
    expectNamed(errors[0], 'one', "'one'");
    expectNamed(errors[1], 'one', "'one'");
    expectNamed(errors[2], 'two', "'two'");
  });

  it('name the tenant when a rotation is refused', async () => {
    const tenants = await registry({ acme: working });
    const acme = await tenants.get('acme');
    const other = await createTestCredentials();
    const error = await rejection<CredentialRotationError>(
      acme.tokens.rotateCredentials({
        key: { privateKey: other.privateKeyPem, certificate: working.certificatePem },
      }),
    );
    expect(error).toBeInstanceOf(CredentialRotationError);
    expect(error.stage).toBe('validation');
    expectNamed(error, 'acme', "'acme'");
  });
});
