import { describe, expect, it } from 'vitest';
import { TokenExchangeError } from 'nestjs-platform-auth';
import { createTestCredentials } from 'nestjs-platform-auth/testing';
import { useCleanup } from '../support/cleanup.js';
import { useRedisServer } from '../support/redis-server.js';
import { startStorePlatform, storeReplica } from '../support/store-fleet.js';

const redis = useRedisServer();
const track = useCleanup();

/** The platform's default token lifetime, and a step past it. */
const PAST_EXPIRY_MS = 3_601_000;

describe('the shared store across a certificate rotation', () => {
  it('a replica started with the promoted files shares the token the fleet got with the next pair', async () => {
    const next = await createTestCredentials();
    const store = await startStorePlatform(track, { url: redis().url });
    const { platform, integration, clock, shared } = store;
    const running = await storeReplica(
      track,
      { ...shared, next: { privateKey: next.privateKeyPem, certificate: next.certificatePem } },
      clock,
    );
    await running.tokens.getAccessToken();

    platform.replaceCertificate(integration.machineId, next.certificatePem);
    clock.advance(PAST_EXPIRY_MS);
    const switched = await running.tokens.getAccessToken();
    expect(running.tokens.status().credentials.thumbprint).toBe(next.thumbprint);
    const accepted = () => platform.journal.filter((record) => record.verdict === 'accepted').length;
    const before = accepted();

    // A replica restarted after the files were promoted: the next pair is its current pair, and it has no next.
    const restarted = await storeReplica(
      track,
      { ...shared, key: { privateKey: next.privateKeyPem, certificate: next.certificatePem } },
      clock,
    );
    expect(await restarted.tokens.getAccessToken()).toBe(switched);
    expect(accepted()).toBe(before);

    // And they renew together: one exchange for both.
    clock.advance(PAST_EXPIRY_MS);
    const [a, b] = await Promise.all([running.tokens.getAccessToken(), restarted.tokens.getAccessToken()]);
    expect(a).toBe(b);
    expect(accepted()).toBe(before + 1);
  });

  it('a replica without the next pair, refused as not registered, does not hold back the replicas that have it', async () => {
    const next = await createTestCredentials();
    const store = await startStorePlatform(track, { url: redis().url });
    const { platform, integration, clock, shared } = store;
    const outdated = await storeReplica(track, shared, clock);
    const prepared = await storeReplica(
      track,
      { ...shared, next: { privateKey: next.privateKeyPem, certificate: next.certificatePem } },
      clock,
    );
    expect(await outdated.tokens.getAccessToken()).toBe(await prepared.tokens.getAccessToken());

    platform.replaceCertificate(integration.machineId, next.certificatePem);
    clock.advance(PAST_EXPIRY_MS);
    const refusal: unknown = await outdated.tokens.getAccessToken().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal instanceof TokenExchangeError && refusal.oauthError).toBe('invalid_client');

    // The outdated replica's refusal is its own: the prepared one exchanges, switches, and gets a token.
    await expect(prepared.tokens.getAccessToken()).resolves.toEqual(expect.any(String));
    expect(prepared.tokens.status().credentials.thumbprint).toBe(next.thumbprint);
  });
});
