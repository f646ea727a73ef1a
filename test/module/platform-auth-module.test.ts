import { Inject, Injectable, Module } from '@nestjs/common';
import { HttpModule } from '@nestjs/axios';
import { ConfigModule } from '@nestjs/config';
import { Test, type TestingModule } from '@nestjs/testing';
import { decodeJwt } from 'jose';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AssertionSigner,
  PlatformAuthConfigError,
  PlatformAuthModule,
  PlatformHttpService,
  platformAuthConfig,
  type PlatformAuthOptions,
} from 'nestjs-platform-auth';
import { PLATFORM_AUTH_MODULE_OPTIONS } from '../../lib/platform-auth.module-definition.js';
import { PLATFORM_AUTH_RUNTIME } from '../../lib/platform-auth.module.js';
import { createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';

let credentials: TestCredentials;
const ENV_KEYS = [
  'PLATFORM_BASE_URL',
  'PLATFORM_MACHINE_ID',
  'PLATFORM_PRIVATE_KEY',
  'PLATFORM_CERTIFICATE',
  'PLATFORM_AUDIENCE',
];

beforeAll(async () => {
  credentials = await createTestCredentials();
});
afterEach(() => {
  for (const key of ENV_KEYS) delete process.env[key];
});

/** The machineId an assertion of the module carries as `sub`: what the resolved configuration says. */
async function assertedMachineId(moduleRef: TestingModule): Promise<unknown> {
  return decodeJwt(await moduleRef.get(AssertionSigner).createAssertion()).sub;
}

function options(): PlatformAuthOptions {
  return {
    baseUrl: 'https://platform.example.com',
    machineId: 'machine-1',
    key: { privateKey: credentials.privateKeyPem, certificate: credentials.certificatePem },
  };
}

async function jwtClaims(signer: AssertionSigner): Promise<Record<string, unknown>> {
  return JSON.parse(Buffer.from((await signer.createAssertion()).split('.')[1], 'base64url').toString()) as Record<
    string,
    unknown
  >;
}

describe('PlatformAuthModule wiring', () => {
  it('forRoot provides a working AssertionSigner', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [PlatformAuthModule.forRoot(options())] }).compile();
    const claims = await jwtClaims(moduleRef.get(AssertionSigner));
    expect(claims).toMatchObject({ iss: credentials.thumbprint, sub: 'machine-1', aud: 'platform.example.com' });
    expect(typeof PLATFORM_AUTH_MODULE_OPTIONS).toBe('string');
    expect(PLATFORM_AUTH_MODULE_OPTIONS).toBe('PLATFORM_AUTH_MODULE_OPTIONS');
    await moduleRef.close();
  });

  it('forRootAsync(platformAuthConfig.asProvider()) reads the environment through ConfigModule', async () => {
    process.env.PLATFORM_BASE_URL = 'https://env.example.com';
    process.env.PLATFORM_MACHINE_ID = 'machine-from-env';
    process.env.PLATFORM_PRIVATE_KEY = credentials.privateKeyPem.replace(/\n/g, '\\n');
    process.env.PLATFORM_CERTIFICATE = credentials.certificatePem;
    process.env.PLATFORM_AUDIENCE = 'sts.env.example.com';
    const moduleRef = await Test.createTestingModule({
      imports: [
        ConfigModule.forRoot({ ignoreEnvFile: true }),
        PlatformAuthModule.forRootAsync(platformAuthConfig.asProvider()),
      ],
    }).compile();
    const claims = await jwtClaims(moduleRef.get(AssertionSigner));
    expect(claims).toMatchObject({ iss: credentials.thumbprint, sub: 'machine-from-env', aud: 'sts.env.example.com' });
    await moduleRef.close();
  });

  it('the config namespace exposes exactly the variables that are set', () => {
    process.env.PLATFORM_BASE_URL = 'https://env.example.com';
    process.env.PLATFORM_MACHINE_ID = '';
    expect(platformAuthConfig.KEY).toBe('CONFIGURATION(platformAuth)');
    expect(platformAuthConfig()).toEqual({ baseUrl: 'https://env.example.com' });
  });

  it('fails start-up with PlatformAuthConfigError naming the environment variables', async () => {
    process.env.PLATFORM_BASE_URL = 'http://platform.example.com';
    const build = Test.createTestingModule({
      imports: [
        ConfigModule.forRoot({ ignoreEnvFile: true }),
        PlatformAuthModule.forRootAsync(platformAuthConfig.asProvider()),
      ],
    }).compile();
    await expect(build).rejects.toBeInstanceOf(PlatformAuthConfigError);
    await expect(build).rejects.toThrow(/PLATFORM_BASE_URL[\s\S]*PLATFORM_MACHINE_ID[\s\S]*PLATFORM_PRIVATE_KEY/);
  });

  it('forRootAsync supports useClass and useExisting', async () => {
    @Injectable()
    class OptionsFactory {
      create(): PlatformAuthOptions {
        return options();
      }
    }
    @Module({ providers: [OptionsFactory], exports: [OptionsFactory] })
    class OptionsModule {}

    const viaClass = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRootAsync({ useClass: OptionsFactory })],
    }).compile();
    expect(await assertedMachineId(viaClass)).toBe('machine-1');
    await viaClass.close();

    const viaExisting = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRootAsync({ imports: [OptionsModule], useExisting: OptionsFactory })],
    }).compile();
    expect(await assertedMachineId(viaExisting)).toBe('machine-1');
    await viaExisting.close();
  });

  it('isGlobal makes the services injectable in modules that do not import it', async () => {
    @Injectable()
    class Consumer {
      constructor(readonly signer: AssertionSigner) {}
    }
    @Module({ providers: [Consumer] })
    class FeatureModule {}

    const moduleRef = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRoot({ ...options(), isGlobal: true }), FeatureModule],
    }).compile();
    expect(moduleRef.get(Consumer).signer).toBeInstanceOf(AssertionSigner);
    await moduleRef.close();

    const notGlobal = Test.createTestingModule({
      imports: [PlatformAuthModule.forRoot(options()), FeatureModule],
    }).compile();
    await expect(notGlobal).rejects.toThrow(/AssertionSigner/);
  });

  it('PlatformHttpService is the authenticated client whatever the HttpModule import order', async () => {
    @Injectable()
    class Consumer {
      constructor(readonly platform: PlatformHttpService) {}
    }
    for (const imports of [
      [HttpModule, PlatformAuthModule.forRoot(options())],
      [PlatformAuthModule.forRoot(options()), HttpModule],
    ]) {
      @Module({ imports, providers: [Consumer] })
      class FeatureModule {}
      const moduleRef = await Test.createTestingModule({ imports: [FeatureModule] }).compile();
      const consumer = moduleRef.get(Consumer);
      expect(consumer.platform).toBeInstanceOf(PlatformHttpService);
      expect(consumer.platform.axiosRef.defaults.baseURL).toBe('https://platform.example.com');
      expect(consumer.platform.axiosRef.interceptors.request).toHaveProperty('handlers.length', 1);
      await moduleRef.close();
    }
  });

  it('does not export its runtime (it holds the parsed key) to importing modules', async () => {
    @Injectable()
    class Snooper {
      constructor(@Inject(PLATFORM_AUTH_RUNTIME) readonly runtime: unknown) {}
    }
    @Module({ imports: [PlatformAuthModule.forRoot(options())], providers: [Snooper] })
    class FeatureModule {}
    await expect(Test.createTestingModule({ imports: [FeatureModule] }).compile()).rejects.toThrow(/Snooper/);
  });
});
