import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssertionSigner } from '../../lib/token/assertion.signer.js';
import { systemClock } from '../../lib/platform-auth.clock.js';
import { loadPlatformAuthConfig } from '../../lib/platform-auth.configuration.js';
import { wireForTest } from '../support/token-provider-harness.js';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { callApi, requestToken } from './emulator-test-kit.js';

let platform: PlatformEmulator;
let integration: EmulatedIntegration;
let signer: AssertionSigner;

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  integration = await platform.createIntegration({ name: 'library interop' });
  signer = wireForTest(await loadPlatformAuthConfig({ ...integration.moduleOptions }, Date.now()), systemClock).signer;
});

afterAll(() => platform.close());

describe("the library's AssertionSigner against the emulator", () => {
  it('gets a token that opens both placeholder routes', async () => {
    const response = await requestToken(platform, await signer.createAssertion());
    expect(response.status).toBe(200);
    const token = response.body.access_token as string;

    expect((await callApi(platform, 'messages', { token })).status).toBe(202);
    expect((await callApi(platform, 'billing', { token })).status).toBe(200);
  });

  it('is accepted base64-wrapped too', async () => {
    const wrapped = Buffer.from(await signer.createAssertion()).toString('base64');
    expect((await requestToken(platform, wrapped)).status).toBe(200);
  });

  it('is refused once the platform clock runs six minutes ahead (an unsynchronised clock)', async () => {
    platform.setClockOffset(6 * 60_000);
    try {
      const response = await requestToken(platform, await signer.createAssertion());
      expect(response.body).toEqual({
        error: 'invalid_grant',
        error_description: expect.stringMatching(/has expired.*clocks out of sync/),
      });
    } finally {
      platform.setClockOffset(0);
    }
  });

  it('serves 200 concurrent exchanges, each with its own assertion', async () => {
    platform.resetCounters();
    const assertions = await Promise.all(Array.from({ length: 200 }, () => signer.createAssertion()));
    const responses = await Promise.all(assertions.map((assertion) => requestToken(platform, assertion)));

    expect(responses.map((response) => response.status)).toEqual(Array(200).fill(200));
    expect(new Set(responses.map((response) => response.body.access_token)).size).toBe(200);
    expect(platform.counters.exchanges).toEqual({ total: 200, accepted: 200, rejected: 0, faulted: 0 });
  });
});
