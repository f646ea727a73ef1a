import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { startCli, untilJson, type RunningCli } from '../cli/cli-harness.js';
import { launchChromium } from '../support/chromium.js';

// What a web page can make a browser send without a CORS preflight (an <img>, a <script>, an <iframe>, a GET form, a
// no-cors fetch), sent by Chromium to `platform-auth proxy`: from a page on this machine's network address to a
// proxy bound to all addresses (which then needs its key), and from a page on loopback to a proxy on loopback. A
// recording server at the same address shows what the browser sends there and that each request was made.

const KINDS = ['img', 'script', 'iframe', 'form', 'fetch'];
/** Each kind of request to `target`, each waited for until it loaded or failed; then the page's title is `done`. */
const PAGE = `<!doctype html><body><script>
const target = new URLSearchParams(location.search).get('target') + '/api/billing?via=';
const settled = (element) => new Promise((resolve) => { element.onload = resolve; element.onerror = resolve; });
const image = new Image();
const waits = [settled(image)];
image.src = target + 'img';
const script = document.createElement('script');
waits.push(settled(script));
script.src = target + 'script';
document.body.append(script);
const frame = document.createElement('iframe');
waits.push(settled(frame));
frame.src = target + 'iframe';
document.body.append(frame);
const sink = document.createElement('iframe');
sink.name = 'sink';
document.body.append(sink);
const form = document.createElement('form');
form.method = 'GET';
form.action = target.slice(0, target.indexOf('?'));
form.target = 'sink';
form.innerHTML = '<input name="via" value="form">';
document.body.append(form);
waits.push(settled(sink));
form.submit();
waits.push(fetch(target + 'fetch', { mode: 'no-cors' }).catch(() => undefined));
Promise.all(waits).then(() => { document.title = 'done'; });
</script></body>`;

/** This machine's first IPv4 address that is not loopback: a page or proxy "on the network". */
const networkAddress = Object.values(networkInterfaces())
  .flat()
  .find((entry) => entry?.family === 'IPv4' && !entry.internal)?.address;

let platform: PlatformEmulator;
let integration: EmulatedIntegration;
let context: BrowserContext;
let profile: string;
let pages: Server;
let recorder: Server;
const recorded: IncomingHttpHeaders[] = [];
const running: RunningCli[] = [];

async function listen(server: Server, host: string): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  integration = await platform.createIntegration({ name: 'browser' });
  pages = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE));
  recorder = createServer((req, res) => {
    recorded.push(req.headers);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('recorded');
  });
  profile = await mkdtemp(join(tmpdir(), 'proxy-chromium-'));
  context = await launchChromium(profile);
});

afterAll(async () => {
  await Promise.all(running.map((cli) => cli.stop()));
  await context?.close();
  pages?.closeAllConnections();
  pages?.close();
  recorder?.closeAllConnections();
  recorder?.close();
  await platform?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
});

/** Opens the page at `pageOrigin`, which requests each kind from `target`, and waits until every request settled. */
async function visit(pageOrigin: string, target: string): Promise<void> {
  const page = await context.newPage();
  try {
    await page.goto(`${pageOrigin}/?target=${encodeURIComponent(target)}`);
    await page.waitForFunction("document.title === 'done'");
  } finally {
    await page.close();
  }
}

async function proxy(args: string[]): Promise<string> {
  const cli = startCli(['proxy', '--port', '0', '--no-env-file', '--json', ...args], integration.env);
  running.push(cli);
  return (await untilJson<{ url: string }>(cli)).url;
}

// CI machines have an address on the network: there a missing one fails the file instead of skipping it quietly.
if (networkAddress === undefined && process.env.CI)
  throw new Error('this machine has no IPv4 address besides loopback: the network half of the proxy test cannot run');

describe.skipIf(networkAddress === undefined)('a page on the network', () => {
  it('reaches an address on the network with simple requests that carry no Origin and no Sec-Fetch-*', async () => {
    const pageOrigin = `http://${networkAddress}:${await listen(pages, '0.0.0.0')}`;
    const recorderOrigin = `http://${networkAddress}:${await listen(recorder, '0.0.0.0')}`;
    await visit(pageOrigin, recorderOrigin);
    expect(recorded).toHaveLength(KINDS.length);
    for (const headers of recorded) {
      for (const name of ['origin', 'sec-fetch-site', 'sec-fetch-dest', 'sec-fetch-user'])
        expect(headers[name], name).toBeUndefined();
    }
  });

  it('calls nothing through a proxy bound to all addresses: none of those requests carries its key', async () => {
    const { port } = new URL(await proxy(['--host', '0.0.0.0']));
    const calls = platform.counters.apiCalls.total;
    await visit(
      `http://${networkAddress}:${(pages.address() as AddressInfo).port}`,
      `http://${networkAddress}:${port}`,
    );
    expect(platform.counters.apiCalls.total).toBe(calls);
  });
});

describe('a page on loopback', () => {
  it('calls nothing through a proxy on loopback: the browser marks every request with Sec-Fetch-*', async () => {
    const pageOrigin = `http://127.0.0.1:${pages.listening ? (pages.address() as AddressInfo).port : await listen(pages, '0.0.0.0')}`;
    const recorderPort = recorder.listening
      ? (recorder.address() as AddressInfo).port
      : await listen(recorder, '0.0.0.0');
    recorded.length = 0;
    await visit(pageOrigin, `http://127.0.0.1:${recorderPort}`);
    expect(recorded).toHaveLength(KINDS.length);
    for (const headers of recorded) expect(headers['sec-fetch-dest']).toBeDefined();

    const target = await proxy([]);
    const calls = platform.counters.apiCalls.total;
    await visit(pageOrigin, target);
    expect(platform.counters.apiCalls.total).toBe(calls);
  });
});
