import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PlatformAuthConfigError } from 'nestjs-platform-auth';
import { createTestCredentials } from 'nestjs-platform-auth/testing';
import { readPlatformAuthEnv } from '../../lib/options/platform-auth.config.js';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { usePlatformFixtures, type PlatformFixture } from '../support/platform-fixture.js';
import { eventually } from '../support/eventually.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { createSecretVolume, type SecretVolume } from '../support/secret-volume.js';

const start = usePlatformFixtures();
const volumes: SecretVolume[] = [];
afterEach(() => volumes.splice(0).forEach((volume) => volume.remove()));
const INTERVAL = 30_000;

async function startWithVolume(): Promise<{ f: PlatformFixture; volume: SecretVolume; logger: RecordingLogger }> {
  const logger = new RecordingLogger();
  // The emulator's integration first, then a volume holding its pair, then a module reading the volume.
  let volume: SecretVolume | undefined;
  const f = await start({
    autoAdvance: false,
    module: { logger },
    moduleFor: (integration) => {
      volume = createSecretVolume({ key: integration.privateKeyPem, certificate: integration.certificatePem });
      volumes.push(volume);
      return {
        key: { privateKeyPath: volume.keyPath, certificatePath: volume.certificatePath },
        credentialsReloadIntervalMs: INTERVAL,
      };
    },
  });
  return { f, volume: volume!, logger };
}

function lastIssuer(f: PlatformFixture): unknown {
  return f.platform.journal.at(-1)?.claims?.iss;
}

describe('credentialsReloadIntervalMs in the module', () => {
  it('a secret update is used from the next assertion; the cached token stays until it expires', async () => {
    const { f, volume } = await startWithVolume();
    const token = await f.tokens.getAccessToken();
    expect(f.tokens.status().credentials.reload).toMatchObject({ state: 'watching', intervalMs: INTERVAL });

    const next = await createTestCredentials();
    f.platform.replaceCertificate(f.integration.machineId, next.certificatePem);
    volume.update({ key: next.privateKeyPem, certificate: next.certificatePem });
    f.clock.advance(INTERVAL);
    // Files are read asynchronously: the check the interval started ends a moment later.
    await eventually(() => expect(f.tokens.status().credentials.thumbprint).toBe(next.thumbprint));
    expect(await f.tokens.getAccessToken()).toBe(token);

    f.clock.advance(600_000); // past the old token's expiry: the renewal is signed with the new pair
    const renewed = await f.tokens.getAccessToken();
    expect(renewed).not.toBe(token);
    expect(lastIssuer(f)).toBe(next.thumbprint);
    expect(f.platform.counters.exchanges.rejected).toBe(0);
  });

  it('a half-written file keeps the old credentials, shows in status() and the log', async () => {
    const { f, volume, logger } = await startWithVolume();
    const next = await createTestCredentials();
    writeFileSync(join(volume.dir, '..data', 'tls.key'), next.privateKeyPem.slice(0, 300));
    f.clock.advance(INTERVAL);
    const reload = await eventually(() => {
      const status = f.tokens.status().credentials.reload;
      expect(status.state).toBe('rejected');
      return status;
    });
    expect(reload.problems?.[0]).toMatch(/^key.privateKeyPath \(PLATFORM_PRIVATE_KEY_PATH\): /);
    expect(logger.messages('error')).toEqual([expect.stringMatching(/Changed credential files were refused/)]);
    await f.tokens.getAccessToken();
    expect(lastIssuer(f)).toBe(f.integration.thumbprint);
  });

  it('stops re-reading when the app closes', async () => {
    const { f } = await startWithVolume();
    expect(f.clock.pendingTimers).toBeGreaterThan(0);
    await f.close();
    expect(f.clock.pendingTimers).toBe(0);
  });
});

describe('PLATFORM_CREDENTIALS_RELOAD_INTERVAL_MS', () => {
  it('is read as a number, and a bad value is a start-up problem naming the variable', async () => {
    const credentials = await createTestCredentials();
    const env = {
      PLATFORM_BASE_URL: 'https://platform.example',
      PLATFORM_MACHINE_ID: 'm',
      PLATFORM_PRIVATE_KEY: credentials.privateKeyPem,
      PLATFORM_CERTIFICATE: credentials.certificatePem,
    };
    expect(readPlatformAuthEnv({ ...env, PLATFORM_CREDENTIALS_RELOAD_INTERVAL_MS: ' 60000 ' })).toMatchObject({
      credentialsReloadIntervalMs: 60_000,
    });
    const bad = readPlatformAuthEnv({ ...env, PLATFORM_CREDENTIALS_RELOAD_INTERVAL_MS: 'often' });
    const error = await loadPlatformAuthConfig(bad, Date.now()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error instanceof PlatformAuthConfigError && error.problems.map((p) => p.setting)).toEqual([
      'credentialsReloadIntervalMs (PLATFORM_CREDENTIALS_RELOAD_INTERVAL_MS)',
    ]);
  });
});
