import { createPrivateKey } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { CredentialRotationError } from 'nestjs-platform-auth';
import { createTestCredentials } from 'nestjs-platform-auth/testing';
import { healthProblem } from '../../lib/terminus/health.indicator.js';
import { eventually } from '../support/eventually.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { usePlatformFixtures, type PlatformFixture } from '../support/platform-fixture.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { createSecretVolume, type SecretVolume } from '../support/secret-volume.js';

const start = usePlatformFixtures();
const volumes: SecretVolume[] = [];
afterEach(() => volumes.splice(0).forEach((volume) => volume.remove()));
const INTERVAL = 30_000;
const LIFETIME_MS = 600_000;

function volume(pair: { privateKeyPem: string; certificatePem: string }): SecretVolume {
  const created = createSecretVolume({ key: pair.privateKeyPem, certificate: pair.certificatePem });
  volumes.push(created);
  return created;
}

/** The same key in other bytes, as a secret re-sync can write it. */
function asPkcs1(privateKeyPem: string): string {
  return createPrivateKey(privateKeyPem).export({ type: 'pkcs1', format: 'pem' }).toString();
}

/** Resolves once a check has finished at the clock's present time: none is in flight, files may change. */
const checkedNow = (f: PlatformFixture) =>
  eventually(() => expect(f.tokens.status().credentials.reload.lastCheckAt?.getTime()).toBe(f.clock.now()));

/** After the check in flight: moves the clock one reload interval and waits until the check it started has finished. */
async function oneReloadCheck(f: PlatformFixture): Promise<void> {
  await checkedNow(f);
  f.clock.advance(INTERVAL);
  await checkedNow(f);
}

/** Current files with the emulated integration's pair (A), next files with B; switched to B by the platform. */
async function switchedToNext() {
  const b = await createTestCredentials();
  const logger = new RecordingLogger();
  let current: SecretVolume | undefined;
  const next = volume(b);
  const f = await start({
    autoAdvance: false,
    module: { logger },
    moduleFor: (integration) => {
      current = volume(integration);
      return {
        key: { privateKeyPath: current.keyPath, certificatePath: current.certificatePath },
        next: { privateKeyPath: next.keyPath, certificatePath: next.certificatePath },
        credentialsReloadIntervalMs: INTERVAL,
      };
    },
  });
  await f.tokens.getAccessToken();
  // The emulated integration's record follows the portal: keep the refused pair as it was.
  const a = { ...f.integration };
  f.platform.replaceCertificate(f.integration.machineId, b.certificatePem);
  f.clock.advance(LIFETIME_MS + 1_000);
  await f.tokens.getAccessToken();
  expect(f.tokens.status().credentials).toMatchObject({
    thumbprint: b.thumbprint,
    switched: { from: a.thumbprint },
  });
  await checkedNow(f);
  return { f, a, b, logger, current: current! };
}

describe('a pair the platform refused as not registered stays refused', () => {
  it('current files rewritten with the refused pair in other bytes (PKCS#1): the accepted pair stays in use', async () => {
    const { f, a, b, logger, current } = await switchedToNext();
    current.update({ key: asPkcs1(a.privateKeyPem), certificate: a.certificatePem });
    await oneReloadCheck(f);

    const credentials = f.tokens.status().credentials;
    expect(credentials.thumbprint).toBe(b.thumbprint);
    expect(credentials.switched).toMatchObject({ from: a.thumbprint, to: b.thumbprint });
    expect(credentials.reload.state).toBe('rejected');
    expect(credentials.reload.problems?.join('\n')).toMatch(
      new RegExp(
        `^key\\.certificatePath \\(PLATFORM_CERTIFICATE_PATH\\): .*refused as not registered.*${a.thumbprint.slice(0, 8)}`,
        'm',
      ),
    );
    expect(healthProblem(f.tokens.status())).toBeUndefined();
    expect(logger.messages('error').join('\n')).toMatch(/refused as not registered/);
    expectNoSecrets([credentials, logger.entries], [a.privateKeyPem, asPkcs1(a.privateKeyPem)]);

    // Every renewal goes on with the accepted pair: no refusal beyond the one that caused the switch.
    for (let i = 0; i < 3; i += 1) {
      f.clock.advance(LIFETIME_MS + 1_000);
      await f.tokens.getAccessToken();
    }
    expect(f.platform.counters.exchanges.rejected).toBe(1);
    expect(f.platform.journal.at(-1)?.claims?.iss).toBe(b.thumbprint);

    // A later check of the same files says the same; files promoted at last are taken, and the switch is over.
    await oneReloadCheck(f);
    expect(f.tokens.status().credentials.reload.state).toBe('rejected');
    current.update({ key: b.privateKeyPem, certificate: b.certificatePem });
    await oneReloadCheck(f);
    expect(f.tokens.status().credentials).toMatchObject({ thumbprint: b.thumbprint, reload: { state: 'watching' } });
    expect(f.tokens.status().credentials.switched).toBeUndefined();
  });

  it('next files that hold the refused pair are refused too; the next pair it has stays', async () => {
    const { f, a, b } = await switchedToNext();
    const c = await createTestCredentials();
    const nextFiles = volumes[0];
    nextFiles.update({ key: c.privateKeyPem, certificate: c.certificatePem });
    await oneReloadCheck(f);
    expect(f.tokens.status().credentials.next).toEqual({ thumbprint: c.thumbprint });

    nextFiles.update({ key: asPkcs1(a.privateKeyPem), certificate: a.certificatePem });
    await oneReloadCheck(f);
    const credentials = f.tokens.status().credentials;
    expect(credentials).toMatchObject({ thumbprint: b.thumbprint, next: { thumbprint: c.thumbprint } });
    expect(credentials.reload.problems?.join('\n')).toMatch(/^next\.certificatePath .*refused as not registered/m);
  });

  it('rotateCredentials() with the refused pair is refused before any exchange; nothing changes', async () => {
    const { f, a, b } = await switchedToNext();
    const sent = f.platform.journal.length;
    const error = await f.tokens
      .rotateCredentials({ key: { privateKey: asPkcs1(a.privateKeyPem), certificate: a.certificatePem } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CredentialRotationError);
    expect(error).toMatchObject({ stage: 'validation' });
    expect((error as Error).message).toMatch(/refused as not registered/);
    expectNoSecrets(error, [a.privateKeyPem, asPkcs1(a.privateKeyPem)]);
    expect(f.platform.journal.length).toBe(sent);
    expect(f.tokens.status().credentials.thumbprint).toBe(b.thumbprint);
  });
});
