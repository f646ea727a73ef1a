import { Injectable, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { Test, type TestingModule } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AssertionSigner,
  InjectAssertionSigner,
  InjectPlatformHttpService,
  InjectTokenProvider,
  PlatformAuthConfigError,
  PlatformAuthModule,
  PlatformHttpService,
  TokenProvider,
  getAssertionSignerToken,
  getTokenProviderToken,
  platformAuthConfig,
} from 'nestjs-platform-auth';
import { createTestCredentials, PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';

let platform: PlatformEmulator;
let main: EmulatedIntegration;
let messages: EmulatedIntegration;
let billing: EmulatedIntegration;

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  main = await platform.createIntegration({ name: 'main' });
  messages = await platform.createIntegration({ name: 'messages', permissions: ['Send message'] });
  billing = await platform.createIntegration({ name: 'billing', permissions: ['Retrieve billing data'] });
});
afterAll(() => platform.close());

@Injectable()
class Clients {
  constructor(
    readonly main: PlatformHttpService,
    @InjectPlatformHttpService('messages') readonly messages: PlatformHttpService,
    @InjectPlatformHttpService('billing') readonly billing: PlatformHttpService,
    @InjectTokenProvider('messages') readonly messageTokens: TokenProvider,
    @InjectTokenProvider('billing') readonly billingTokens: TokenProvider,
    @InjectAssertionSigner('billing') readonly billingSigner: AssertionSigner,
    readonly mainTokens: TokenProvider,
  ) {}
}

function appModule() {
  @Module({
    imports: [
      PlatformAuthModule.forRoot(main.moduleOptions),
      PlatformAuthModule.forRoot({ name: 'messages', ...messages.moduleOptions }),
      PlatformAuthModule.forRoot({ name: 'billing', ...billing.moduleOptions }),
    ],
    providers: [Clients],
  })
  class AppModule {}
  return AppModule;
}

const open: TestingModule[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((moduleRef) => moduleRef.close()));
});

async function start(): Promise<Clients> {
  return (await startModule()).get(Clients);
}

async function startModule(): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({ imports: [appModule()] }).compile();
  open.push(moduleRef);
  return moduleRef;
}

/** Exchanges the platform accepted for `integration`, by the machineId its assertions carried. */
function acceptedFor(integration: EmulatedIntegration): number {
  return platform.journal.filter((r) => r.verdict === 'accepted' && r.claims?.sub === integration.machineId).length;
}

function subject(assertion: string): unknown {
  return (JSON.parse(Buffer.from(assertion.split('.')[1], 'base64url').toString()) as { sub: unknown }).sub;
}

describe('named integrations', () => {
  it('each integration has its own credentials, token and client, and the platform sees its own permissions', async () => {
    const clients = await start();
    expect(new Set([clients.main, clients.messages, clients.billing]).size).toBe(3);
    expect(new Set([clients.mainTokens, clients.messageTokens, clients.billingTokens]).size).toBe(3);
    expect(subject(await clients.billingSigner.createAssertion())).toBe(billing.machineId);

    const sent = await firstValueFrom(clients.messages.post('/api/messages', { text: 'hello' }));
    expect(sent.status).toBe(202);
    const figures = await firstValueFrom(clients.billing.get('/api/billing'));
    expect(figures.status).toBe(200);
    // The wrong integration for the job is refused by the platform with its 403.
    const refused = await firstValueFrom(clients.messages.get('/api/billing', { validateStatus: () => true }));
    expect(refused.status).toBe(403);

    const tokens = await Promise.all([
      clients.mainTokens.getAccessToken(),
      clients.messageTokens.getAccessToken(),
      clients.billingTokens.getAccessToken(),
    ]);
    expect(new Set(tokens).size).toBe(3);
    expect(clients.messages.axiosRef.defaults.baseURL).toBe(platform.url);
  });

  it("the token getters find each integration's own services from the application, the default one included", async () => {
    const moduleRef = await startModule();
    const clients = moduleRef.get(Clients);
    expect(moduleRef.get(getTokenProviderToken())).toBe(clients.mainTokens);
    expect(moduleRef.get(getTokenProviderToken('billing'))).toBe(clients.billingTokens);
    expect(moduleRef.get(getTokenProviderToken('messages'))).toBe(clients.messageTokens);
    expect(moduleRef.get(getAssertionSignerToken('billing'))).toBe(clients.billingSigner);
    expect([clients.mainTokens.status().integration, clients.billingTokens.status().integration]).toEqual([
      'default',
      'billing',
    ]);
  });

  it('a 401 on one integration renews only that one', async () => {
    const clients = await start();
    await firstValueFrom(clients.billing.get('/api/billing'));
    await firstValueFrom(clients.messages.post('/api/messages', { text: 'one' }));
    const [billingBefore, messagesBefore] = [acceptedFor(billing), acceptedFor(messages)];
    const messageToken = await clients.messageTokens.getAccessToken();

    expect(platform.revokeToken(await clients.billingTokens.getAccessToken())).toBe(true);
    expect((await firstValueFrom(clients.billing.get('/api/billing'))).status).toBe(200);

    expect(acceptedFor(billing)).toBe(billingBefore + 1);
    expect(acceptedFor(messages)).toBe(messagesBefore);
    expect(await clients.messageTokens.getAccessToken()).toBe(messageToken);
  });

  it('two apps with the same names share nothing', async () => {
    const [a, b] = await Promise.all([start(), start()]);
    expect(a.billing).not.toBe(b.billing);
    expect(a.billingTokens).not.toBe(b.billingTokens);
    await Promise.all([firstValueFrom(a.billing.get('/api/billing')), firstValueFrom(b.billing.get('/api/billing'))]);
    expect(await a.billingTokens.getAccessToken()).not.toBe(await b.billingTokens.getAccessToken());
  });

  it('a misspelt name fails at start-up, naming the service and the integration it looked for', async () => {
    @Injectable()
    class Misspelt {
      constructor(@InjectTokenProvider('biling') readonly tokens: TokenProvider) {}
    }
    @Module({
      imports: [PlatformAuthModule.forRoot({ name: 'billing', ...billing.moduleOptions })],
      providers: [Misspelt],
    })
    class AppModule {}
    const failure = Test.createTestingModule({ imports: [AppModule] }).compile();
    await expect(failure).rejects.toThrow(/Misspelt .*Symbol\(nestjs-platform-auth:TokenProvider:biling\)/);
  });

  it('a named module does not export its services by class, so it never shadows the default integration', async () => {
    @Injectable()
    class NeedsDefault {
      constructor(readonly tokens: TokenProvider) {}
    }
    @Module({
      imports: [PlatformAuthModule.forRoot({ name: 'billing', ...billing.moduleOptions })],
      providers: [NeedsDefault],
    })
    class AppModule {}
    await expect(Test.createTestingModule({ imports: [AppModule] }).compile()).rejects.toThrow(/NeedsDefault/);
  });

  it("a named integration's log lines carry its name in the context", async () => {
    const soon = await createTestCredentials({ days: 10 });
    const lines: [string, unknown][] = [];
    const keep = (message: unknown, context?: unknown) => void lines.push([String(message), context]);
    const moduleRef = await Test.createTestingModule({
      imports: [
        PlatformAuthModule.forRoot({
          name: 'billing',
          baseUrl: platform.url,
          machineId: 'billing-machine',
          key: { privateKey: soon.privateKeyPem, certificate: soon.certificatePem },
        }),
      ],
    })
      .setLogger({ log: keep, warn: keep, error: keep })
      .compile();
    open.push(moduleRef);
    expect(lines.find(([message]) => message.includes('expires in'))?.[1]).toBe('PlatformAuth:billing');
  });

  it('refuses a name that cannot become part of an environment variable', () => {
    expect(() => PlatformAuthModule.forRoot({ name: 'Billing Prod', ...billing.moduleOptions })).toThrow(
      PlatformAuthConfigError,
    );
    expect(() => getTokenProviderToken('')).toThrow(/lower-case letters/);
  });
});

describe('platformAuthConfig.forIntegration', () => {
  const variables = ['PLATFORM_BILLING_BASE_URL', 'PLATFORM_BILLING_MACHINE_ID', 'PLATFORM_BILLING_PRIVATE_KEY'];
  afterEach(() => {
    for (const name of [...variables, 'PLATFORM_BILLING_CERTIFICATE']) delete process.env[name];
  });

  it('reads PLATFORM_<NAME>_* variables for a named integration', async () => {
    process.env.PLATFORM_BILLING_BASE_URL = platform.url;
    process.env.PLATFORM_BILLING_MACHINE_ID = billing.machineId;
    process.env.PLATFORM_BILLING_PRIVATE_KEY = billing.privateKeyPem;
    process.env.PLATFORM_BILLING_CERTIFICATE = billing.certificatePem;
    const moduleRef = await Test.createTestingModule({
      imports: [
        ConfigModule.forRoot({ ignoreEnvFile: true }),
        PlatformAuthModule.forRootAsync({
          name: 'billing',
          ...platformAuthConfig.forIntegration('billing').asProvider(),
        }),
      ],
    }).compile();
    open.push(moduleRef);
    const signer = moduleRef.get<AssertionSigner>(getAssertionSignerToken('billing'));
    expect(subject(await signer.createAssertion())).toBe(billing.machineId);
  });

  it("names the integration's own variables in start-up errors", async () => {
    process.env.PLATFORM_BILLING_BASE_URL = 'http://platform.example.com';
    const failure = Test.createTestingModule({
      imports: [
        ConfigModule.forRoot({ ignoreEnvFile: true }),
        PlatformAuthModule.forRootAsync({
          name: 'billing',
          ...platformAuthConfig.forIntegration('billing').asProvider(),
        }),
      ],
    }).compile();
    await expect(failure).rejects.toThrow(
      /integration 'billing'[\s\S]*PLATFORM_BILLING_BASE_URL[\s\S]*PLATFORM_BILLING_MACHINE_ID[\s\S]*PLATFORM_BILLING_PRIVATE_KEY/,
    );
  });
});
