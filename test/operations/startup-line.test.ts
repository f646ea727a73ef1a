import { X509Certificate, randomBytes } from 'node:crypto';
import { Test } from '@nestjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { PlatformAuthModule, getTokenProviderToken, type TokenProvider } from 'nestjs-platform-auth';
import { PlatformEmulator, createTestCredentials } from 'nestjs-platform-auth/testing';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { startupLine } from '../../lib/platform-auth.startup-line.js';
import { CapturingLogger } from '../support/capturing-logger.js';

const closing: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

describe('the start-up line', () => {
  it('says, once per integration at log level, its name, platform host, certificate and token store', async () => {
    const platform = await PlatformEmulator.start();
    closing.push(() => platform.close());
    const main = await platform.createIntegration();
    const billing = await platform.createIntegration();
    const logger = new CapturingLogger();
    const moduleRef = await Test.createTestingModule({
      imports: [
        PlatformAuthModule.forRoot({ ...main.moduleOptions, logger }),
        PlatformAuthModule.forRoot({ name: 'billing', ...billing.moduleOptions, logger }),
      ],
    }).compile();
    closing.push(() => moduleRef.close());
    await moduleRef.init();

    const host = new URL(platform.url).host;
    expect(logger.messages('log')).toEqual([
      `Integration 'default' started: platform ${host}, certificate ${main.thumbprint.slice(0, 8)}… valid until ${expiryDate(main.certificatePem)} (364 days left), token store in-process`,
      `Integration 'billing' started: platform ${host}, certificate ${billing.thumbprint.slice(0, 8)}… valid until ${expiryDate(billing.certificatePem)} (364 days left), token store in-process`,
    ]);
    const everything = JSON.stringify(logger.lines);
    for (const secret of [main.machineId, billing.machineId, main.privateKeyPem, main.thumbprint])
      expect(everything).not.toContain(secret);
  });

  it('logs the first exchange and the next ones at debug level only, never the token or machineId', async () => {
    const platform = await PlatformEmulator.start();
    closing.push(() => platform.close());
    const integration = await platform.createIntegration();
    const logger = new CapturingLogger();
    const moduleRef = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRoot({ ...integration.moduleOptions, logger })],
    }).compile();
    closing.push(() => moduleRef.close());
    await moduleRef.init();
    const token = await moduleRef.get<TokenProvider>(getTokenProviderToken()).getAccessToken();

    expect(logger.lines.map((line) => line.level)).toEqual(['log', 'debug']);
    expect(logger.messages('debug')).toEqual([
      expect.stringMatching(/^Token exchange succeeded \(1 attempt, \d+\.\d{3} s\); the token is valid for 600 s$/),
    ]);
    const everything = JSON.stringify(logger.lines);
    expect(everything).not.toContain(token);
    expect(everything).not.toContain(integration.machineId);
  });

  it('names a shared store without its URL, and a thumbprint without a certificate as such', async () => {
    const credentials = await createTestCredentials();
    const config = await loadPlatformAuthConfig(
      {
        baseUrl: 'https://platform.example.com',
        machineId: 'machine',
        key: { privateKey: credentials.privateKeyPem },
        thumbprint: credentials.thumbprint,
        tokenStore: {
          url: 'redis://:store-password@redis.internal:6379',
          encryptionKey: randomBytes(32).toString('hex'),
        },
      },
      Date.now(),
    );
    const line = startupLine(config, 'default', Date.now());
    expect(line).toBe(
      `Integration 'default' started: platform platform.example.com, thumbprint ${credentials.thumbprint.slice(0, 8)}… (no certificate configured, expiry unknown), token store shared (Redis)`,
    );
    expect(line).not.toContain('store-password');
  });
});

function expiryDate(certificatePem: string): string {
  return new Date(new X509Certificate(certificatePem).validTo).toISOString().slice(0, 10);
}
