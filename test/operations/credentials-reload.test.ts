import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestCredentials, FakeClock, type TestCredentials } from 'nestjs-platform-auth/testing';
import { loadCredentials } from '../../lib/credentials/credentials.loader.js';
import { pairNames } from '../../lib/credentials/key-pair.sources.js';
import { CredentialsReloader } from '../../lib/credentials/credentials.reloader.js';
import { ConfigReport } from '../../lib/options/config.report.js';
import { PlatformAuthTelemetry } from '../../lib/telemetry/telemetry.service.js';
import { credentialsLifecycle } from '../support/credentials-lifecycle.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { createSecretVolume, type SecretVolume } from '../support/secret-volume.js';

const INTERVAL = 10_000;
const volumes: SecretVolume[] = [];
afterEach(() => volumes.splice(0).forEach((volume) => volume.remove()));

async function startReloader(first: TestCredentials) {
  const volume = createSecretVolume({ key: first.privateKeyPem, certificate: first.certificatePem });
  volumes.push(volume);
  const clock = new FakeClock();
  const sources = { privateKeyPath: volume.keyPath, certificatePath: volume.certificatePath, names: pairNames('key') };
  const logger = new RecordingLogger();
  const holder = credentialsLifecycle(loadCredentials(sources, clock.now(), new ConfigReport())!, clock, logger);
  const reloader = new CredentialsReloader(
    sources,
    INTERVAL,
    clock,
    holder,
    PlatformAuthTelemetry.channelOnly('abc', clock),
    logger,
    {},
  );
  reloader.start();
  await reloader.settled();
  /** One interval on the fake clock, and the check it starts run to its end (files are read asynchronously). */
  const tick = async (): Promise<void> => {
    clock.advance(INTERVAL);
    await reloader.settled();
  };
  return { volume, clock, holder, logger, reloader, tick, thumbprint: () => holder.active.credentials.thumbprint };
}

describe('credential reload from *_PATH files', () => {
  it('picks up a Kubernetes-style secret update (..data symlink swap) on the next check, by the clock', async () => {
    const [first, second] = await Promise.all([createTestCredentials(), createTestCredentials()]);
    const r = await startReloader(first);
    await r.tick();
    expect(r.reloader.status()).toMatchObject({ state: 'watching', intervalMs: INTERVAL });
    expect(r.thumbprint()).toBe(first.thumbprint);

    r.volume.update({ key: second.privateKeyPem, certificate: second.certificatePem });
    expect(r.thumbprint()).toBe(first.thumbprint); // nothing happens between checks
    await r.tick();
    expect(r.thumbprint()).toBe(second.thumbprint);
    expect(r.reloader.status().lastReloadAt?.getTime()).toBe(r.clock.now());
    expect(r.logger.messages('log').join('\n')).toContain(`thumbprint ${second.thumbprint} (was ${first.thumbprint})`);
    r.reloader.stop();
    expect(r.clock.pendingTimers).toBe(0);
  });

  it('does not reload unchanged files (content hash), even when the symlink is swapped to identical content', async () => {
    const first = await createTestCredentials();
    const r = await startReloader(first);
    const before = r.holder.active;
    r.volume.update({ key: first.privateKeyPem, certificate: first.certificatePem });
    await r.tick();
    expect(r.holder.active).toBe(before);
    expect(r.logger.entries).toEqual([]);
    r.reloader.stop();
  });

  it('keeps the last good pair while files have vanished for a moment, and warns only when it lasts', async () => {
    const [first, second] = await Promise.all([createTestCredentials(), createTestCredentials()]);
    const r = await startReloader(first);
    r.volume.removeCurrent();
    await r.tick();
    expect(r.thumbprint()).toBe(first.thumbprint);
    expect(r.logger.entries).toEqual([]);
    r.volume.update({ key: second.privateKeyPem, certificate: second.certificatePem });
    await r.tick();
    expect(r.thumbprint()).toBe(second.thumbprint);

    r.volume.removeCurrent();
    for (let i = 0; i < 3; i += 1) await r.tick();
    expect(r.logger.messages('warn')).toEqual([expect.stringMatching(/unreadable for 3 checks/)]);
    expect(r.thumbprint()).toBe(second.thumbprint);
    r.reloader.stop();
  });

  it('refuses a half-written key file, keeps the old credentials, reports why (no PEM), then takes the finished file', async () => {
    const [first, second] = await Promise.all([createTestCredentials(), createTestCredentials()]);
    const r = await startReloader(first);
    const dataDir = join(r.volume.dir, '..data');
    writeFileSync(join(dataDir, 'tls.key'), second.privateKeyPem.slice(0, second.privateKeyPem.length / 2));
    writeFileSync(join(dataDir, 'tls.crt'), second.certificatePem);
    await r.tick();
    expect(r.thumbprint()).toBe(first.thumbprint);
    const status = r.reloader.status();
    expect(status.state).toBe('rejected');
    expect(status.problems?.join('\n')).toMatch(/key.privateKeyPath \(PLATFORM_PRIVATE_KEY_PATH\)/);
    expect(r.logger.messages('error')[0]).toMatch(
      new RegExp(`last good pair \\(thumbprint ${first.thumbprint}\\) stays in use`),
    );
    expectNoSecrets({ status, log: r.logger.entries }, [second.privateKeyPem, first.privateKeyPem]);

    await r.tick(); // same half-written content: not checked, not logged again
    expect(r.logger.messages('error')).toHaveLength(1);
    writeFileSync(join(dataDir, 'tls.key'), second.privateKeyPem);
    await r.tick();
    expect(r.thumbprint()).toBe(second.thumbprint);
    expect(r.reloader.status().state).toBe('watching');
    expect(r.reloader.status().problems).toBeUndefined();
    r.reloader.stop();
  });

  it('refuses a certificate that does not belong to the key (files updated one at a time)', async () => {
    const [first, second] = await Promise.all([createTestCredentials(), createTestCredentials()]);
    const r = await startReloader(first);
    writeFileSync(join(r.volume.dir, '..data', 'tls.crt'), second.certificatePem);
    await r.tick();
    expect(r.thumbprint()).toBe(first.thumbprint);
    expect(r.reloader.status().problems?.join('\n')).toMatch(/does not match the private key/);
    r.reloader.stop();
  });

  it('is off without an interval', async () => {
    const first = await createTestCredentials();
    const clock = new FakeClock();
    const holder = credentialsLifecycle(
      loadCredentials(
        { privateKey: first.privateKeyPem, certificate: first.certificatePem, names: pairNames('key') },
        clock.now(),
        new ConfigReport(),
      )!,
      clock,
      new RecordingLogger(),
    );
    const reloader = new CredentialsReloader(
      { privateKey: first.privateKeyPem, names: pairNames('key') },
      undefined,
      clock,
      holder,
      PlatformAuthTelemetry.channelOnly('abc', clock),
      new RecordingLogger(),
      {},
    );
    reloader.start();
    expect(reloader.enabled).toBe(false);
    expect(reloader.status()).toEqual({ state: 'off' });
    expect(clock.pendingTimers).toBe(0);
  });
});
