import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestCredentials, FakeClock, PlatformEmulator } from 'nestjs-platform-auth/testing';
import { AssertionFactory, obtainAccessToken } from './emulator-test-kit.js';

const clock = new FakeClock(Date.now());
let platform: PlatformEmulator;
let tokens: [string, string];

beforeAll(async () => {
  platform = await PlatformEmulator.start({ now: () => clock.now() });
  const token = async (): Promise<string> => {
    const credentials = await createTestCredentials();
    const integration = platform.registerIntegration({ certificatePem: credentials.certificatePem });
    const assertions = new AssertionFactory(credentials.privateKeyPem, integration, platform.audience);
    return obtainAccessToken(platform, assertions, clock.now());
  };
  tokens = [await token(), await token()];
});

afterAll(() => platform.close());

beforeEach(() => platform.resetCounters());

function send(token: string, key: string | undefined, body: unknown = { text: 'hello' }): Promise<Response> {
  return fetch(`${platform.url}/api/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      ...(key !== undefined && { 'idempotency-key': key }),
    },
    body: JSON.stringify(body),
  });
}

describe('the idempotency journal of the placeholder API', () => {
  it('answers a repeated key with the first answer, processes it once and counts the duplicate', async () => {
    const first = await send(tokens[0], 'message-1');
    const again = await send(tokens[0], 'message-1');
    const firstBody = (await first.json()) as { messageId: string };
    const againBody = (await again.json()) as { messageId: string };

    expect([first.status, again.status]).toEqual([202, 202]);
    // A second processing would have given the message a new id.
    expect(againBody.messageId).toBe(firstBody.messageId);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(platform.counters.idempotency).toEqual({ keys: 1, duplicates: 1, mismatches: 0 });
  });

  it('keeps keys per integration: the same key from another integration is a new message', async () => {
    const one = (await (await send(tokens[0], 'shared-key')).json()) as { messageId: string };
    const other = (await (await send(tokens[1], 'shared-key')).json()) as { messageId: string };

    expect(other.messageId).not.toBe(one.messageId);
    expect(platform.counters.idempotency).toEqual({ keys: 2, duplicates: 0, mismatches: 0 });
  });

  it('refuses a key reused for a different body with 422 and leaves the first answer in place', async () => {
    const first = (await (await send(tokens[0], 'reused', { text: 'a' })).json()) as { messageId: string };
    const reused = await send(tokens[0], 'reused', { text: 'b' });
    const replay = (await (await send(tokens[0], 'reused', { text: 'a' })).json()) as { messageId: string };

    expect(reused.status).toBe(422);
    expect(await reused.json()).toMatchObject({ error: 'idempotency_key_reused' });
    expect(replay.messageId).toBe(first.messageId);
    expect(platform.counters.idempotency).toEqual({ keys: 1, duplicates: 1, mismatches: 1 });
  });

  it('processes every request without a key, and answers one key sent many times at once once', async () => {
    const unkeyed = await Promise.all([send(tokens[0], undefined), send(tokens[0], undefined)]);
    const ids = await Promise.all(unkeyed.map(async (r) => ((await r.json()) as { messageId: string }).messageId));
    expect(new Set(ids).size).toBe(2);

    const burst = await Promise.all(Array.from({ length: 20 }, () => send(tokens[0], 'burst')));
    const burstIds = await Promise.all(burst.map(async (r) => ((await r.json()) as { messageId: string }).messageId));
    expect(new Set(burstIds).size).toBe(1);
    expect(platform.counters.idempotency).toEqual({ keys: 1, duplicates: 19, mismatches: 0 });
  });

  it('keeps its answers through a counter reset', async () => {
    const first = (await (await send(tokens[0], 'kept')).json()) as { messageId: string };
    platform.resetCounters();
    const again = (await (await send(tokens[0], 'kept')).json()) as { messageId: string };
    expect(again.messageId).toBe(first.messageId);
    expect(platform.counters.idempotency).toEqual({ keys: 0, duplicates: 1, mismatches: 0 });
  });
});
