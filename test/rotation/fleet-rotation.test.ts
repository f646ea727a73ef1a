import { describe, expect, it } from 'vitest';
import { createTestCredentials } from 'nestjs-platform-auth/testing';
import { useCleanup } from '../support/cleanup.js';
import { useRedisServer } from '../support/redis-server.js';
import { startStorePlatform, tokensOf, useStoreFleets } from '../support/store-fleet.js';

const redis = useRedisServer();
const track = useCleanup();
const startStoreFleet = useStoreFleets();

const PROCESSES = 3;
const INSTANCES = 2;
const LIFETIME_MS = 600_000;

describe('a fleet on a shared store across the portal cut-over', () => {
  it('converges on the next pair with at most one refused exchange per replica and no failed call', async () => {
    const next = await createTestCredentials();
    const platform = await startStorePlatform(track, { url: redis().url });
    const withNext = {
      ...platform,
      shared: { ...platform.shared, next: { privateKey: next.privateKeyPem, certificate: next.certificatePem } },
    };
    const fleet = await startStoreFleet(track, withNext, PROCESSES, INSTANCES);
    const replicas = PROCESSES * INSTANCES;
    expect(new Set(tokensOf(await fleet.getAll())).size).toBe(1);

    platform.platform.replaceCertificate(platform.integration.machineId, next.certificatePem);
    const cutOver = platform.platform.journal.length;
    // Many lifetimes: each renewal is won by whichever replica takes the lock; every call must succeed throughout.
    for (let lifetime = 0; lifetime < 8; lifetime += 1) {
      await fleet.advance(LIFETIME_MS + 1_000);
      tokensOf(await fleet.getAll());
    }
    const after = platform.platform.journal.slice(cutOver);
    const refused = after.filter((record) => record.verdict === 'rejected');
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeLessThanOrEqual(replicas);
    expect(refused.every((record) => record.rule === 'iss')).toBe(true);
    // Each refusal was followed, in its own exchange, by the next pair's acceptance: one warning per refusal.
    const warnings = (await fleet.logs()).filter((line) => line.message.includes('as not registered'));
    expect(warnings).toHaveLength(refused.length);
    const accepted = after.filter((record) => record.verdict === 'accepted');
    expect(accepted.every((record) => record.claims?.iss === next.thumbprint)).toBe(true);
    // The store still shares: about one exchange per lifetime, not one per replica.
    expect(accepted.length).toBeLessThanOrEqual(8 + refused.length);
  });
});
