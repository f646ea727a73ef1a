import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestCredentials,
  FakeClock,
  PlatformEmulator,
  type EmulatedIntegration,
} from 'nestjs-platform-auth/testing';
import { authorizationRequestUrl } from '../support/user-sign-in.js';
import { AssertionFactory, requestToken } from './emulator-test-kit.js';

const clock = new FakeClock(Date.now());
let platform: PlatformEmulator;
let integration: EmulatedIntegration;
let assertions: AssertionFactory;

beforeAll(async () => {
  platform = await PlatformEmulator.start({ now: () => clock.now(), inspector: true });
  integration = await platform.createIntegration({ name: 'orders <script>alert(1)</script>' });
  assertions = new AssertionFactory(integration.privateKeyPem, integration, platform.audience);
});

afterAll(() => platform.close());

async function page(): Promise<{ html: string; csrf: string; response: Response }> {
  const response = await fetch(platform.inspectorUrl!);
  const html = await response.text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!csrf) throw new Error('the page carries no CSRF token');
  return { html, csrf, response };
}

function post(action: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return fetch(`${platform.url}/_emulator/actions/${action}`, {
    method: 'POST',
    body: new URLSearchParams(fields),
    headers,
    redirect: 'manual',
  });
}

describe('emulator inspector over HTTP', () => {
  it('is 404, like any unknown path, without the option', async () => {
    const plain = await PlatformEmulator.start();
    try {
      expect(plain.inspectorUrl).toBeUndefined();
      for (const path of ['/_emulator/', '/_emulator/journal.json', '/_emulator/inspector.js']) {
        const response = await fetch(plain.url + path);
        expect(response.status).toBe(404);
        expect(await response.json()).toMatchObject({ error: 'not_found' });
      }
    } finally {
      await plain.close();
    }
  });

  it('serves the page, its assets and the JSON under a strict Content-Security-Policy, with no inline code', async () => {
    const { html, response } = await page();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    for (const path of [
      '/_emulator/',
      '/_emulator/journal.json',
      '/_emulator/inspector.css',
      '/_emulator/inspector.js',
    ]) {
      const asset = await fetch(platform.url + path);
      expect(asset.status, path).toBe(200);
      const csp = asset.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("default-src 'none'");
      expect(csp, path).toContain("script-src 'self'");
      expect(csp, path).toContain("style-src 'self'");
      expect(csp, path).not.toContain('unsafe-inline');
      expect(asset.headers.get('x-content-type-options')).toBe('nosniff');
    }
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
    // The integration's name comes from the caller: escaped, never markup.
    expect(html).toContain('orders &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain('<script>alert(1)');
  });

  it('refuses actions without the CSRF token, from another origin, or from another site', async () => {
    const { csrf } = await page();
    const suspend = { machineId: integration.machineId, status: 'Suspended' };
    const refusals = [
      await post('status', suspend),
      await post('status', { ...suspend, csrf: csrf.slice(0, -1) + (csrf.endsWith('A') ? 'B' : 'A') }),
      await post('status', { ...suspend, csrf }, { origin: 'http://evil.example' }),
      await post('status', { ...suspend, csrf }, { 'sec-fetch-site': 'cross-site' }),
    ];
    for (const refusal of refusals) {
      expect(refusal.status).toBe(403);
      expect(refusal.headers.get('location')).toBeNull();
    }
    expect(integration.status).toBe('Active');

    const accepted = await post('status', { ...suspend, csrf }, { origin: platform.url });
    expect(accepted.status).toBe(303);
    expect(accepted.headers.get('location')).toBe('/_emulator/#integrations');
    expect(integration.status).toBe('Suspended');
    expect((await page()).html).toContain(`integration ${integration.machineId} is now Suspended`);
    platform.setIntegrationStatus(integration.machineId, 'Active');
  });

  it('answers only to the emulator host names (no DNS rebinding)', async () => {
    const { port } = new URL(platform.url);
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/_emulator/journal.json', headers: { host: `rebound.example:${port}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(421);
  });

  it('drives the controls: clock offset, faults, permissions and revocation, each redirecting back', async () => {
    const { csrf } = await page();
    expect((await post('clock', { csrf, offsetSeconds: '-90' })).status).toBe(303);
    expect(
      (await post('fault', { csrf, target: 'token', kind: 'status', status: '503', retryAfter: '7' })).status,
    ).toBe(303);
    expect(
      (await post('permissions', { csrf, machineId: integration.machineId, permission: 'Send message' })).status,
    ).toBe(303);
    const snapshot = (await (await fetch(`${platform.url}/_emulator/journal.json`)).json()) as {
      emulator: { clockOffsetMs: number };
      faults: Array<{ kind: string; status: number; headerNames: string[] }>;
      integrations: Array<{ permissions: string[] }>;
    };
    expect(snapshot.emulator.clockOffsetMs).toBe(-90_000);
    expect(snapshot.faults).toEqual([
      { target: 'token', kind: 'status', status: 503, headerNames: ['Retry-After'], bodyLength: 0 },
    ]);
    expect(snapshot.integrations[0].permissions).toEqual(['Send message']);
    expect((await requestToken(platform, await assertions.sign({ nowMs: clock.now() }))).status).toBe(503);

    platform.setClockOffset(0);
    platform.setPermissions(integration.machineId, ['Send message', 'Retrieve billing data']);
    const issued = await requestToken(platform, await assertions.sign({ nowMs: clock.now() }));
    expect(issued.status).toBe(200);
    expect((await post('revoke', { csrf })).status).toBe(303);
    const billing = await fetch(`${platform.url}/api/billing`, {
      headers: { authorization: `Bearer ${issued.body.access_token as string}` },
    });
    expect(billing.status).toBe(401);

    const bad = await post('clock', { csrf, offsetSeconds: 'soon' });
    expect(bad.status).toBe(303);
    expect((await page()).html).toContain('clock failed: setClockOffset: ms must be a finite number');
  });

  it('lists user sign-in steps generically, without codes', async () => {
    platform.registerUserClient({ clientId: 'web-app', redirectUris: ['http://127.0.0.1:9/callback'] });
    const authorize = authorizationRequestUrl(platform.authorizeUrl, 'web-app', 'http://127.0.0.1:9/callback');
    expect((await fetch(authorize)).status).toBe(200);
    expect(platform.userJournal.length).toBeGreaterThan(0);
    const { html } = await page();
    const section = html.slice(html.indexOf('id="sign-in"'));
    expect(section).toContain('web-app');
    expect(section).toContain(platform.userJournal[0].step);
    expect(section).not.toContain('No user sign-in step recorded');
  });

  it('uploads a new certificate as the portal does: the old key is refused, a malformed one is named', async () => {
    const { csrf, html } = await page();
    expect(html).toContain('Replace certificate');
    const next = await createTestCredentials();
    const previous = integration.thumbprint;
    const uploaded = await post('certificate', {
      csrf,
      machineId: integration.machineId,
      certificatePem: next.certificatePem,
    });
    try {
      expect(uploaded.status).toBe(303);
      expect(uploaded.headers.get('location')).toBe('/_emulator/#integrations');
      expect(integration.thumbprint).toBe(next.thumbprint);
      expect((await page()).html).toContain(`now holds the certificate with thumbprint ${next.thumbprint}`);
      const old = await requestToken(
        platform,
        await assertions.sign({ nowMs: clock.now(), claims: { iss: previous } }),
      );
      expect(old.status).toBe(400);
      expect(platform.journal.at(-1)?.rule).toBe('iss');

      const malformed = await post('certificate', {
        csrf,
        machineId: integration.machineId,
        certificatePem: '-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----',
      });
      expect(malformed.status).toBe(303);
      expect((await page()).html).toContain(
        'certificate failed: replaceCertificate: certificatePem is not a PEM X.509 certificate',
      );
      expect(integration.thumbprint).toBe(next.thumbprint);
    } finally {
      platform.replaceCertificate(integration.machineId, integration.certificatePem);
    }
    expect((await requestToken(platform, await assertions.sign({ nowMs: clock.now() }))).status).toBe(200);
  });

  it('records a verdict for every rule, not only the first one broken', async () => {
    const stale = clock.now() - 10 * 60_000;
    const response = await requestToken(
      platform,
      await assertions.sign({ nowMs: stale, claims: { aud: 'platform.example.com' } }),
    );
    expect(response.status).toBe(400);
    const record = platform.journal.at(-1)!;
    expect(record.rule).toBe('aud');
    const outcomes = Object.fromEntries(record.rules!.map((rule) => [rule.rule, rule.outcome]));
    expect(outcomes).toMatchObject({ signature: 'ok', sub: 'ok', status: 'ok', aud: 'failed', expired: 'failed' });
    const expired = record.rules!.find((rule) => rule.rule === 'expired')!;
    expect(expired.differenceSeconds).toBeLessThanOrEqual(-300);
    expect(record.rules!.find((rule) => rule.rule === 'aud')).toMatchObject({
      expected: JSON.stringify(platform.audience),
      received: '"platform.example.com"',
    });
  });
});
