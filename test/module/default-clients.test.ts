import { Injectable, Module, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AssertionSigner,
  InjectPlatformFetch,
  InjectPlatformHttpService,
  InjectTokenProvider,
  PlatformAuthModule,
  PlatformFetch,
  PlatformHttpService,
  TokenProvider,
  getAssertionSignerToken,
  getPlatformFetchToken,
  getPlatformHttpServiceToken,
  getTokenProviderToken,
} from 'nestjs-platform-auth';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';

let platform: PlatformEmulator;
let main: EmulatedIntegration;
let billing: EmulatedIntegration;

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  main = await platform.createIntegration({ name: 'main' });
  billing = await platform.createIntegration({ name: 'billing' });
});
afterAll(() => platform.close());

@Injectable()
class ByClass {
  constructor(
    readonly http: PlatformHttpService,
    readonly fetch: PlatformFetch,
    readonly tokens: TokenProvider,
    readonly signer: AssertionSigner,
  ) {}
}

@Injectable()
class ByName {
  constructor(
    @InjectPlatformHttpService('billing') readonly http: PlatformHttpService,
    @InjectPlatformFetch('billing') readonly fetch: PlatformFetch,
    @InjectTokenProvider('billing') readonly tokens: TokenProvider,
  ) {}
}

const defaultModule = () => PlatformAuthModule.forRoot({ ...main.moduleOptions, startupCheck: 'off' });
const billingModule = () =>
  PlatformAuthModule.forRoot({ name: 'billing', ...billing.moduleOptions, startupCheck: 'off' });

/** The default integration imported before or after the named one, at the root or from a feature module. */
function appWith(order: 'default first' | 'named first' | 'named in a feature module'): Type {
  @Module({ imports: [billingModule()], exports: [billingModule().module] })
  class FeatureModule {}
  const imports =
    order === 'default first'
      ? [defaultModule(), billingModule()]
      : order === 'named first'
        ? [billingModule(), defaultModule()]
        : [FeatureModule, defaultModule()];
  @Module({ imports, providers: [ByClass, ByName] })
  class AppModule {}
  return AppModule;
}

/** The integration the emulator's last token request authenticated as. */
function lastSubject(): unknown {
  return platform.journal.at(-1)?.machineId;
}

describe.each(['default first', 'named first', 'named in a feature module'] as const)(
  'the classes are the default integration’s (%s)',
  (order) => {
    it('app.get of each class gives the default integration’s instance, never the named one’s', async () => {
      const app = await NestFactory.createApplicationContext(appWith(order), { logger: false });
      try {
        expect(app.get(PlatformHttpService)).toBe(app.get(getPlatformHttpServiceToken()));
        expect(app.get(PlatformFetch)).toBe(app.get(getPlatformFetchToken()));
        expect(app.get(TokenProvider)).toBe(app.get(getTokenProviderToken()));
        expect(app.get(AssertionSigner)).toBe(app.get(getAssertionSignerToken()));
        expect(app.get(TokenProvider)).not.toBe(app.get(getTokenProviderToken('billing')));
        expect(app.get(PlatformFetch, { strict: false })).not.toBe(app.get(getPlatformFetchToken('billing')));

        await app.get(TokenProvider).getAccessToken();
        expect(lastSubject()).toBe(main.machineId);
      } finally {
        await app.close();
      }
    });

    it('injection by class gives the default’s, by decorator the named one’s', async () => {
      const app = await NestFactory.createApplicationContext(appWith(order), { logger: false });
      try {
        const byClass = app.get(ByClass);
        const byName = app.get(ByName);
        expect(byClass.http).toBe(app.get(getPlatformHttpServiceToken()));
        expect(byClass.fetch).toBe(app.get(getPlatformFetchToken()));
        expect(byClass.tokens).toBe(app.get(getTokenProviderToken()));
        expect(byName.tokens).toBe(app.get(getTokenProviderToken('billing')));
        expect(byName.tokens).not.toBe(byClass.tokens);

        expect((await byName.fetch.fetch('/api/billing')).status).toBe(200);
        expect(lastSubject()).toBe(billing.machineId);
        expect((await byClass.fetch.fetch('/api/billing')).status).toBe(200);
        expect(lastSubject()).toBe(main.machineId);
      } finally {
        await app.close();
      }
    });
  },
);

describe('named integrations without a default one', () => {
  it('injecting a class fails at start-up, naming the class', async () => {
    @Module({ imports: [billingModule()], providers: [ByClass] })
    class NamedOnly {}

    const started = Test.createTestingModule({ imports: [NamedOnly] }).compile();

    await expect(started).rejects.toThrow(/PlatformHttpService/);
  });

  it('app.get of a class fails instead of answering with a named integration’s instance', async () => {
    @Module({ imports: [billingModule()], providers: [ByName] })
    class NamedOnly {}
    const app = await NestFactory.createApplicationContext(NamedOnly, { logger: false });
    try {
      expect(() => app.get(PlatformHttpService)).toThrow(/PlatformHttpService/);
      expect(() => app.get(TokenProvider)).toThrow(/TokenProvider/);
      expect(app.get(ByName).tokens).toBe(app.get(getTokenProviderToken('billing')));
    } finally {
      await app.close();
    }
  });
});
