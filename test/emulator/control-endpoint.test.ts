import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestCredentials,
  PlatformEmulator,
  type EmulatedIntegration,
  type RegisteredIntegration,
} from 'nestjs-platform-auth/testing';
import { createTestCertificateAuthority } from '../support/test-ca.js';
import { AssertionFactory, requestToken } from './emulator-test-kit.js';

let platform: PlatformEmulator;
let integration: EmulatedIntegration;
const replaced: Array<[string, string]> = [];

beforeAll(async () => {
  platform = await PlatformEmulator.start({
    control: true,
    onCertificateReplaced: (changed: RegisteredIntegration, pem: string) => replaced.push([changed.machineId, pem]),
  });
  integration = await platform.createIntegration({ name: 'orders' });
});
afterAll(() => platform.close());

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** One request with exactly these headers (fetch would not let a test set Host). */
function send(
  method: string,
  path: string,
  { headers = {}, body, url = platform.url }: { headers?: Record<string, string>; body?: string; url?: string } = {},
): Promise<Answer> {
  const target = new URL(path, url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: target.hostname, port: target.port, method, path: target.pathname, headers: { ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode!, body: text ? (JSON.parse(text) as Answer['body']) : {} }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const upload = (machineId: string, certificatePem: unknown, headers: Record<string, string> = {}) =>
  send('PUT', `/_emulator/control/integrations/${machineId}/certificate`, {
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ certificatePem }),
  });

describe('the emulator control endpoint', () => {
  it('lists the integrations and replaces a certificate as the portal does: the old key is refused', async () => {
    const listed = await send('GET', '/_emulator/control/integrations');
    expect(listed).toEqual({
      status: 200,
      body: {
        integrations: [
          { machineId: integration.machineId, name: 'orders', thumbprint: integration.thumbprint, status: 'Active' },
        ],
      },
    });
    const before = new AssertionFactory(integration.privateKeyPem, { ...integration }, platform.audience);
    const next = await createTestCredentials();
    const answer = await upload(integration.machineId, next.certificatePem);
    expect(answer).toEqual({
      status: 200,
      body: {
        integration: {
          machineId: integration.machineId,
          name: 'orders',
          thumbprint: next.thumbprint,
          status: 'Active',
        },
      },
    });
    expect(replaced).toEqual([[integration.machineId, next.certificatePem]]);
    expect((await requestToken(platform, await before.sign({ nowMs: Date.now() }))).status).toBe(400);
    expect(platform.journal.at(-1)?.rule).toBe('iss');
    const after = new AssertionFactory(next.privateKeyPem, integration, platform.audience);
    expect((await requestToken(platform, await after.sign({ nowMs: Date.now() }))).status).toBe(200);
  });

  it('refuses a malformed certificate, a non-RSA one and an unknown integration with a clear error', async () => {
    const thumbprint = integration.thumbprint;
    expect(await upload(integration.machineId, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----')).toEqual(
      {
        status: 400,
        body: {
          error: 'invalid_certificate',
          message: 'replaceCertificate: certificatePem is not a PEM X.509 certificate',
        },
      },
    );
    const dir = mkdtempSync(join(tmpdir(), 'platform-auth-control-'));
    try {
      const ecCertificate = readFileSync((await createTestCertificateAuthority(dir)).caPath, 'utf8');
      expect(await upload(integration.machineId, ecCertificate)).toMatchObject({
        status: 400,
        body: { message: expect.stringMatching(/holds a ec key; the platform verifies RS256, which needs RSA/) },
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(await upload(integration.machineId, undefined)).toMatchObject({
      status: 400,
      body: { message: expect.stringMatching(/certificatePem is missing/) },
    });
    for (const machineId of ['no-such-id', '%E0%A4%A']) {
      expect(await upload(machineId, integration.certificatePem)).toMatchObject({
        status: 404,
        body: { error: 'unknown_integration' },
      });
    }
    expect(
      await send('PUT', `/_emulator/control/integrations/${integration.machineId}/certificate`, {
        headers: { 'content-type': 'text/plain' },
        body: 'x',
      }),
    ).toMatchObject({ status: 415 });
    expect(integration.thumbprint).toBe(thumbprint);
  });

  it('is not for browsers nor for other host names: Origin, Sec-Fetch-Site and a rebound Host are refused', async () => {
    const pem = (await createTestCredentials()).certificatePem;
    const { port } = new URL(platform.url);
    const refusals = [
      await upload(integration.machineId, pem, { origin: platform.url }),
      await upload(integration.machineId, pem, { 'sec-fetch-site': 'same-origin' }),
      await upload(integration.machineId, pem, { host: `rebound.example:${port}` }),
      await send('GET', '/_emulator/control/integrations', { headers: { origin: 'http://evil.example' } }),
    ];
    expect(refusals.map((refusal) => refusal.status)).toEqual([403, 403, 421, 403]);
    expect(replaced.at(-1)?.[1]).not.toBe(pem);
  });

  const external = Object.values(networkInterfaces())
    .flat()
    .find((address) => address && address.family === 'IPv4' && !address.internal)?.address;
  it.skipIf(external === undefined)("refuses a client that is not on this machine's loopback", async () => {
    const open = await PlatformEmulator.start({ host: '0.0.0.0', control: true });
    try {
      const { port } = new URL(open.url);
      const answer = await send('GET', '/_emulator/control/integrations', {
        url: `http://${external}:${port}`,
        headers: { host: `127.0.0.1:${port}` },
      });
      expect(answer).toMatchObject({
        status: 403,
        body: { message: expect.stringMatching(/only to clients on this machine/) },
      });
    } finally {
      await open.close();
    }
  });

  it('is 404 without the option, and a HEAD or OPTIONS on the token endpoint counts as no exchange', async () => {
    const plain = await PlatformEmulator.start();
    try {
      expect((await send('GET', '/_emulator/control/integrations', { url: plain.url })).status).toBe(404);
      for (const method of ['HEAD', 'OPTIONS']) {
        const probe = await fetch(plain.tokenUrl, { method });
        expect(probe.status, method).toBe(405);
        expect(probe.headers.get('allow')).toBe('POST');
        expect(probe.headers.get('date')).toBeTruthy();
      }
      expect(plain.counters.exchanges.total).toBe(0);
      expect(plain.journal).toEqual([]);
      // A GET is still a token request the endpoint refuses, as before.
      expect((await fetch(plain.tokenUrl)).status).toBe(405);
      expect(plain.counters.exchanges).toMatchObject({ total: 1, rejected: 1 });
    } finally {
      await plain.close();
    }
  });
});
