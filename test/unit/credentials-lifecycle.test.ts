import { createPrivateKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTestCredentials, FakeClock, type TestCredentials } from 'nestjs-platform-auth/testing';
import { loadCredentials, type LoadedCredentials } from '../../lib/credentials/credentials.loader.js';
import { pairNames } from '../../lib/credentials/key-pair.sources.js';
import { ConfigReport } from '../../lib/options/config.report.js';
import { credentialsLifecycle } from '../support/credentials-lifecycle.js';
import { RecordingLogger } from '../support/recording-logger.js';

const clock = new FakeClock();

function loaded(pair: TestCredentials, privateKey = pair.privateKeyPem): LoadedCredentials {
  return loadCredentials(
    { privateKey, certificate: pair.certificatePem, names: pairNames('key') },
    clock.now(),
    new ConfigReport(),
  )!;
}

describe('the credential lifecycle', () => {
  it('goes through its states by its transitions, and never takes back a pair the platform refused', async () => {
    const [a, b, c, d] = await Promise.all([1, 2, 3, 4].map(() => createTestCredentials()));
    const logger = new RecordingLogger();
    const lifecycle = credentialsLifecycle(loaded(a), clock, logger);
    const iss = async () => {
      const assertion = await lifecycle.signers().current.createAssertion();
      return JSON.parse(Buffer.from(assertion.split('.')[1], 'base64url').toString()).iss as string;
    };
    expect(lifecycle.state).toBe('current');
    expect(lifecycle.signers().next).toBeUndefined();

    expect(lifecycle.nextReloaded(loaded(b))).toBeUndefined();
    expect(lifecycle.state).toBe('current+next');

    // switch: the exchange's signer for the next pair was accepted.
    const candidate = lifecycle.signers().next!;
    expect(candidate.thumbprint).toBe(b.thumbprint);
    candidate.accepted();
    candidate.accepted(); // a second exchange's acceptance changes nothing
    expect(lifecycle.state).toBe('switched');
    expect(lifecycle.describe().switched).toMatchObject({ from: a.thumbprint, to: b.thumbprint });
    expect(await iss()).toBe(b.thumbprint);

    // The refused pair, in other bytes, is refused as current and as next; nothing changes.
    const pkcs1 = createPrivateKey(a.privateKeyPem).export({ type: 'pkcs1', format: 'pem' }).toString();
    expect(lifecycle.reloaded(loaded(a, pkcs1))).toMatch(/refused as not registered/);
    expect(lifecycle.nextReloaded(loaded(a, pkcs1))).toMatch(/refused as not registered/);
    expect(lifecycle.refusal(loaded(a))).toMatch(/refused as not registered/);
    expect(lifecycle.state).toBe('switched');
    expect(await iss()).toBe(b.thumbprint);

    expect(lifecycle.nextReloaded(loaded(c))).toBeUndefined();
    expect(lifecycle.state).toBe('switched+next');
    // reload: the files caught up with the pair in use; the switch is over.
    expect(lifecycle.reloaded(loaded(b))).toBeUndefined();
    expect(lifecycle.state).toBe('current+next');
    expect(lifecycle.describe().switched).toBeUndefined();

    // rotate: a pair under the same machineId, then a cut-over to another one.
    expect(lifecycle.rotated('machine', loaded(d))).toBe(false);
    expect(await iss()).toBe(d.thumbprint);
    expect(lifecycle.rotated('another-machine', loaded(c))).toBe(true);
    expect(lifecycle.state).toBe('current'); // the next pair went in use
    expect(lifecycle.active.machineId).toBe('another-machine');

    expect(logger.messages('warn')).toHaveLength(1);
    expect(logger.messages('log')).toHaveLength(5);
  });

  it('hands a rotation a signer for its candidate only, under the machineId given', async () => {
    const [a, b] = await Promise.all([createTestCredentials(), createTestCredentials()]);
    const lifecycle = credentialsLifecycle(loaded(a), clock, new RecordingLogger());
    const signers = lifecycle.candidateSigners('other', loaded(b));
    expect(signers.next).toBeUndefined();
    const assertion = await signers.current.createAssertion();
    const claims = JSON.parse(Buffer.from(assertion.split('.')[1], 'base64url').toString()) as Record<string, string>;
    expect(claims).toMatchObject({ iss: b.thumbprint, sub: 'other' });
    expect(lifecycle.active.credentials.thumbprint).toBe(a.thumbprint);
  });
});
