import { afterEach, describe, expect, it } from 'vitest';
import { createTestCredentials } from 'nestjs-platform-auth/testing';
import { eventually } from '../support/eventually.js';
import { usePlatformFixtures } from '../support/platform-fixture.js';
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

describe('file reload with a next pair: the files catch up without interrupting anything', () => {
  it('switch in the exchange, then promote the files (next becomes current, a new next or none): no refusal, no failed call', async () => {
    const [b, c] = await Promise.all([createTestCredentials(), createTestCredentials()]);
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
    const a = f.integration.thumbprint;
    const tick = async (ms: number) => {
      f.clock.advance(ms);
      await f.tokens.getAccessToken();
    };
    /** Files are read asynchronously: moves the clock an interval at a time until a check has seen the change. */
    const untilChecked = (assertion: () => void) =>
      eventually(() => {
        f.clock.advance(INTERVAL);
        assertion();
      });
    await f.tokens.getAccessToken();
    expect(f.tokens.status().credentials).toMatchObject({ thumbprint: a, next: { thumbprint: b.thumbprint } });

    // The portal step; the next renewal switches within its exchange.
    f.platform.replaceCertificate(f.integration.machineId, b.certificatePem);
    await tick(LIFETIME_MS + 1_000);
    expect(f.tokens.status().credentials).toMatchObject({ thumbprint: b.thumbprint, switched: { from: a } });
    expect(f.platform.counters.exchanges.rejected).toBe(1);

    // Promote the files: current ← b, next ← c. Nothing is refused and no call waits.
    current!.update({ key: b.privateKeyPem, certificate: b.certificatePem });
    next.update({ key: c.privateKeyPem, certificate: c.certificatePem });
    await untilChecked(() => {
      expect(f.tokens.status().credentials).toMatchObject({
        thumbprint: b.thumbprint,
        next: { thumbprint: c.thumbprint },
      });
      expect(f.tokens.status().credentials.switched).toBeUndefined();
    });
    expect(f.tokens.status().credentials.reload.state).toBe('watching');
    expect(logger.messages('log')).toEqual(
      expect.arrayContaining([
        `Credential files now hold the pair in use (thumbprint ${b.thumbprint}); nothing changes for the platform.`,
        `The next pair was reloaded from files: thumbprint ${c.thumbprint}.`,
      ]),
    );
    await tick(LIFETIME_MS + 1_000);
    expect(f.platform.counters.exchanges.rejected).toBe(1);
    expect(f.platform.journal.at(-1)?.claims?.iss).toBe(b.thumbprint);

    // The next rotation goes the same way, and then no next pair at all (its files removed).
    f.platform.replaceCertificate(f.integration.machineId, c.certificatePem);
    await tick(LIFETIME_MS + 1_000);
    expect(f.tokens.status().credentials.thumbprint).toBe(c.thumbprint);
    current!.update({ key: c.privateKeyPem, certificate: c.certificatePem });
    next.removeCurrent();
    await untilChecked(() => {
      expect(f.tokens.status().credentials.next).toBeUndefined();
      expect(f.tokens.status().credentials.switched).toBeUndefined();
    });
    expect(f.tokens.status().credentials.thumbprint).toBe(c.thumbprint);
    // The promotion ends with the next pair's files removed after the switch: said, though nothing changes.
    expect(logger.messages('log')).toContain(`The next pair's files were removed: there is no next pair now.`);
    await tick(LIFETIME_MS + 1_000);
    expect(f.platform.counters.exchanges.rejected).toBe(2);
    expect(logger.messages('error')).toEqual([]);
  });

  it('refuses next files that hold the current pair, or do not match, keeping the next pair it has', async () => {
    const [b, c] = await Promise.all([createTestCredentials(), createTestCredentials()]);
    const next = volume(b);
    let current: SecretVolume | undefined;
    const logger = new RecordingLogger();
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
    next.update({ key: c.privateKeyPem, certificate: b.certificatePem });
    const reload = await eventually(() => {
      f.clock.advance(INTERVAL);
      const status = f.tokens.status().credentials.reload;
      expect(status.state).toBe('rejected');
      return status;
    });
    expect(reload.problems?.join('\n')).toMatch(
      /^next.certificatePath \(PLATFORM_NEXT_CERTIFICATE_PATH\): .*does not match/m,
    );
    expect(f.tokens.status().credentials.next).toEqual({ thumbprint: b.thumbprint });

    next.update({ key: f.integration.privateKeyPem, certificate: f.integration.certificatePem });
    await eventually(() => {
      f.clock.advance(INTERVAL);
      expect(f.tokens.status().credentials.reload.problems?.join('\n')).toMatch(/is the current pair/);
    });
    expect(f.tokens.status().credentials.next).toEqual({ thumbprint: b.thumbprint });
    // Each refusal is logged once, with its problem.
    expect(logger.messages('error')).toEqual([
      expect.stringMatching(/does not match/),
      expect.stringMatching(/is the current pair/),
    ]);
  });
});
