import { mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { launchChromium } from '../support/chromium.js';
import { expectNoSecrets } from '../support/leak-check.js';
import { AssertionFactory, requestToken } from './emulator-test-kit.js';

/** Git-ignored: the screenshot is an artifact of the run, not a file of the repository. */
const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts');
let platform: PlatformEmulator;
let integration: EmulatedIntegration;
let assertions: AssertionFactory;
let profile: string;
let context: BrowserContext;
let page: Page;
const cspViolations: string[] = [];
/** Every token, assertion and PEM the test handles, none of which the page may show. */
const secrets: string[] = [];

beforeAll(async () => {
  platform = await PlatformEmulator.start({ inspector: true });
  integration = await platform.createIntegration({ name: 'orders service' });
  assertions = new AssertionFactory(integration.privateKeyPem, integration, platform.audience);
  secrets.push(integration.privateKeyPem, integration.certificatePem);
  profile = await mkdtemp(join(tmpdir(), 'inspector-chromium-'));
  context = await launchChromium(profile, { viewport: { width: 1280, height: 900 } });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
});

afterAll(async () => {
  await context?.close();
  await platform?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
});

async function exchange(claims?: Record<string, unknown>): Promise<number> {
  const assertion = await assertions.sign({ nowMs: Date.now(), claims });
  secrets.push(assertion);
  const response = await requestToken(platform, assertion);
  if (typeof response.body.access_token === 'string') secrets.push(response.body.access_token);
  return response.status;
}

/** The newest exchange on a freshly loaded page, opened. */
async function openNewestExchange() {
  await page.goto(platform.inspectorUrl!);
  const newest = page.locator('#journal details.exchange').first();
  await newest.locator('summary').click();
  return newest;
}

describe.sequential('emulator inspector in Chromium', () => {
  it('shows an accepted exchange with every rule passed', async () => {
    expect(await exchange()).toBe(200);
    const newest = await openNewestExchange();
    expect(await newest.getAttribute('data-verdict')).toBe('accepted');
    expect(await newest.locator('tr[data-outcome="failed"]').count()).toBe(0);
    for (const rule of [
      'alg',
      'typ',
      'iss',
      'signature',
      'sub',
      'status',
      'aud',
      'lifetime',
      'expired',
      'jti-replay',
    ]) {
      expect(await newest.locator(`tr[data-rule="${rule}"]`).getAttribute('data-outcome'), rule).toBe('ok');
    }
    await expect(newest.locator('tr[data-rule="sub"]').innerText()).resolves.toContain(integration.machineId);
    expect(await page.locator('#integrations').innerText()).toContain(integration.thumbprint);
    expect(await page.locator('#tokens').innerText()).toMatch(/1 remembered, 1 usable/);
  });

  it('shows a wrong aud as rejected, with the aud row marked and both values', async () => {
    expect(await exchange({ aud: 'platform.example.com' })).toBe(400);
    const newest = await openNewestExchange();
    expect(await newest.getAttribute('data-verdict')).toBe('rejected');
    const aud = newest.locator('tr[data-rule="aud"]');
    expect(await aud.getAttribute('class')).toMatch(/\bfailed\b.*\bdecisive\b/);
    const row = await aud.innerText();
    expect(row).toContain('"platform.example.com"');
    expect(row).toContain(JSON.stringify(platform.audience));
    expect(await newest.locator('tr[data-outcome="failed"]').count()).toBe(1);
    await expect(newest.locator('summary').innerText()).resolves.toContain('invalid audience');
  });

  it('suspends the integration from the page, and the next exchange fails', async () => {
    await page.goto(platform.inspectorUrl!);
    const row = page.locator(`#integrations tr[data-machine-id="${integration.machineId}"]`);
    await row.getByRole('button', { name: 'Suspend' }).click();
    await page.waitForURL(/\/_emulator\/#integrations$/);
    await expect(row.innerText()).resolves.toContain('Suspended');
    expect(integration.status).toBe('Suspended');

    expect(await exchange()).toBe(400);
    const newest = await openNewestExchange();
    expect(await newest.getAttribute('data-verdict')).toBe('rejected');
    expect(await newest.locator('tr[data-rule="status"]').getAttribute('data-outcome')).toBe('failed');

    await page
      .locator(`#integrations tr[data-machine-id="${integration.machineId}"]`)
      .getByRole('button', { name: 'Activate' })
      .click();
    await page.waitForURL(/#integrations$/);
    expect(integration.status).toBe('Active');
  });

  it('renders no token, assertion or PEM, in the page or the JSON, and breaks no CSP rule', async () => {
    await page.goto(platform.inspectorUrl!);
    await page.locator('details').evaluateAll((all) => {
      for (const details of all) details.setAttribute('open', '');
    });
    const html = await page.content();
    const json = await (await fetch(`${platform.url}/_emulator/journal.json`)).text();
    expect(secrets.length).toBeGreaterThanOrEqual(6);
    expectNoSecrets(html, secrets);
    expectNoSecrets(json, secrets);
    for (const text of [html, json]) expect(text).not.toContain('-----BEGIN');
    // The page did load its stylesheet: a blocked one would leave the badges unstyled.
    const badge = page.locator('#journal .badge.accepted').first();
    expect(
      await badge.evaluate(
        (element) =>
          (globalThis as unknown as { getComputedStyle(element: unknown): { color: string } }).getComputedStyle(element)
            .color,
      ),
    ).toBe('rgb(255, 255, 255)');
    expect(cspViolations).toEqual([]);

    // The screenshot shows the refusal for a wrong aud opened, as docs/emulator.md does.
    await page.locator('details.exchange').evaluateAll((all) => {
      for (const details of all) details.toggleAttribute('open', details.textContent!.includes('invalid audience'));
    });
    mkdirSync(ARTIFACTS, { recursive: true });
    const screenshot = join(ARTIFACTS, 'emulator-inspector.png');
    await page.screenshot({ path: screenshot, fullPage: true });
  });
});
