import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  PlatformAuthConfigError,
  PlatformAuthModule,
  TokenProvider,
  type PlatformAuthOptions,
} from 'nestjs-platform-auth';
import { createTestCredentials, type TestCredentials } from 'nestjs-platform-auth/testing';
import { PlatformUserAuthModule, type PlatformUserAuthOptions } from 'nestjs-platform-auth/user';

/** Two problems of the machine module: no machineId, and a base URL in clear text to a remote host. */
const brokenMachine = (): PlatformAuthOptions =>
  ({
    baseUrl: 'http://platform.example.com',
    key: { privateKey: credentials.privateKeyPem, certificate: credentials.certificatePem },
  }) as PlatformAuthOptions;
/** One problem of user sign-in: no client id. */
const brokenUser: PlatformUserAuthOptions = {
  baseUrl: 'https://platform.example.com',
  redirectUri: 'https://app.example.com/callback',
  stateSecret: 'uP4g0cF8vJm2Qx7Rz1Kd9Wn3Ys6Tb5Ha',
  discovery: false,
} as PlatformUserAuthOptions;

let credentials: TestCredentials;
beforeAll(async () => {
  credentials = await createTestCredentials();
});

async function startupError(...imports: unknown[]): Promise<PlatformAuthConfigError> {
  const error: unknown = await Test.createTestingModule({ imports: imports as never[] })
    .compile()
    .then(
      () => undefined,
      (caught: unknown) => caught,
    );
  expect(error).toBeInstanceOf(PlatformAuthConfigError);
  return error as PlatformAuthConfigError;
}

describe('configuration problems of every module, at once', () => {
  it('the machine module and user sign-in both misconfigured: one error with the problems of both', async () => {
    const error = await startupError(
      PlatformAuthModule.forRoot(brokenMachine()),
      PlatformUserAuthModule.forRoot(brokenUser),
    );
    expect(error.problems.map((problem) => problem.setting)).toEqual([
      expect.stringMatching(/^PlatformAuthModule: baseUrl \(PLATFORM_BASE_URL\)$/),
      expect.stringMatching(/^PlatformAuthModule: machineId \(PLATFORM_MACHINE_ID\)$/),
      expect.stringMatching(/^PlatformUserAuthModule: clientId \(PLATFORM_USER_CLIENT_ID\)$/),
    ]);
    expect(error.message).toMatch(/^Invalid platform auth configuration \(3 problems\):\n/);
    expect(error.message).toContain('  - PlatformUserAuthModule: clientId (PLATFORM_USER_CLIENT_ID): is required');
  });

  it('whichever module fails first, and with a default and a named integration broken beside user sign-in', async () => {
    const error = await startupError(
      PlatformUserAuthModule.forRoot(brokenUser),
      PlatformAuthModule.forRoot(brokenMachine()),
      PlatformAuthModule.forRoot({ name: 'billing', ...brokenMachine() }),
    );
    const modules = new Set(error.problems.map((problem) => problem.setting.split(':')[0]));
    expect(modules).toEqual(new Set(['PlatformUserAuthModule', 'PlatformAuthModule', "PlatformAuthModule 'billing'"]));
    expect(error.problems).toHaveLength(5);
  });

  it('one module misconfigured: its own error, unchanged', async () => {
    const error = await startupError(
      PlatformAuthModule.forRoot({ name: 'billing', ...brokenMachine() }),
      PlatformUserAuthModule.forRoot({ ...brokenUser, clientId: 'web-app' }),
    );
    expect(error.integration).toBe('billing');
    expect(error.problems.map((problem) => problem.setting)).toEqual([
      'baseUrl (PLATFORM_BILLING_BASE_URL)',
      'machineId (PLATFORM_BILLING_MACHINE_ID)',
    ]);
  });

  it('two applications started together report only their own problems', async () => {
    const [machineOnly, userOnly] = await Promise.all([
      startupError(PlatformAuthModule.forRoot(brokenMachine())),
      startupError(PlatformUserAuthModule.forRoot(brokenUser)),
    ]);
    expect(machineOnly.problems.map((problem) => problem.option)).toEqual(['baseUrl', 'machineId']);
    expect(userOnly.problems.map((problem) => problem.option)).toEqual(['clientId']);
  });

  it("fails without waiting for a module whose options are built from the broken module's services", async () => {
    @Injectable()
    class UserOptions {
      // Built from the machine integration: it can never be, since that one is broken.
      constructor(readonly tokens: TokenProvider) {}
      create(): PlatformUserAuthOptions {
        return brokenUser;
      }
    }
    @Module({ providers: [UserOptions], exports: [UserOptions] })
    class OptionsModule {}

    const error = await startupError(
      PlatformAuthModule.forRoot({ ...brokenMachine(), isGlobal: true }),
      PlatformUserAuthModule.forRootAsync({ imports: [OptionsModule], useExisting: UserOptions }),
    );
    expect(error.problems.map((problem) => problem.option)).toEqual(['baseUrl', 'machineId']);
  });
});
