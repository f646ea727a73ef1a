import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../support/built-package.js';

// The proxy's memory under load, measured in a process of its own that runs nothing else: the built AuthProxy with
// plain fetch as its `send`, forwarding to a platform in this process. What is measured is the proxy process's peak
// resident set (`process.resourceUsage().maxRSS`, which no sampling can miss) after the burst, less its resident set
// before it: everything the proxy held (bodies, their copies, sockets' buffers, garbage not yet collected) counts.

const MiB = 1024 * 1024;
const BODY_BYTES = 16 * MiB;
const CONCURRENT = 20;
/** What the proxy's memory may grow by under any load. */
const MAX_GROWTH_BYTES = 256 * MiB;

const PROXY_PROCESS = `
import { createInterface } from 'node:readline';
const { AuthProxy } = await import(process.argv[1]);
const proxy = await AuthProxy.start({ host: '127.0.0.1', port: 0, platformOrigin: process.argv[2], send: fetch });
const memory = () => ({ rss: process.memoryUsage().rss, maxRss: process.resourceUsage().maxRSS * 1024 });
console.log(JSON.stringify({ url: proxy.url, ...memory() }));
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'memory') console.log(JSON.stringify(memory()));
}
await proxy.close();
`;

interface Memory {
  readonly rss: number;
  readonly maxRss: number;
}

let platform: Server;
let platformOrigin: string;
/** Bodies the platform has read whole, each waiting for the test to let it be answered. */
const arrived: Array<() => void> = [];
let proxyProcess: ChildProcessWithoutNullStreams;
let nextLine: () => Promise<string>;

beforeAll(async () => {
  platform = createServer((req, res) => {
    req.resume();
    req.on('end', () => arrived.push(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('taken')));
  });
  await new Promise<void>((resolve) => platform.listen(0, '127.0.0.1', resolve));
  platformOrigin = `http://127.0.0.1:${(platform.address() as AddressInfo).port}`;
  proxyProcess = spawn(
    process.execPath,
    [
      '--input-type=module',
      '--eval',
      PROXY_PROCESS,
      join(packageRoot, 'dist/cli/proxy/auth-proxy.server.js'),
      platformOrigin,
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const lines = createInterface({ input: proxyProcess.stdout })[Symbol.asyncIterator]();
  nextLine = async () => {
    const { value, done } = await lines.next();
    if (done) throw new Error('the proxy process ended');
    return value;
  };
}, 120_000);

afterAll(async () => {
  proxyProcess.stdin.end();
  await new Promise((resolve) => proxyProcess.once('close', resolve));
  platform.closeAllConnections();
  platform.close();
});

function post(url: string, body: Buffer): Promise<{ status: number; retryAfter?: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: hostname,
        port,
        method: 'POST',
        path: '/api/upload',
        headers: { 'content-type': 'application/octet-stream' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'] }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function memory(): Promise<Memory> {
  proxyProcess.stdin.write('memory\n');
  return JSON.parse(await nextLine()) as Memory;
}

describe("the proxy's memory", () => {
  it(`grows by less than 256 MiB under ${CONCURRENT} concurrent 16 MiB POSTs, and one 16 MiB POST still goes through`, async () => {
    const { url } = JSON.parse(await nextLine()) as { url: string };
    const body = Buffer.alloc(BODY_BYTES, 0x61);
    // Warm up: the first request loads what fetch needs; the burst is measured from after it.
    const warmUp = post(url, Buffer.alloc(1024));
    await expect.poll(() => arrived.length, { timeout: 60_000 }).toBe(1);
    arrived.shift()!();
    expect((await warmUp).status).toBe(200);
    const before = await memory();

    let refused = 0;
    const outcomes = Array.from({ length: CONCURRENT }, () =>
      post(url, body).then((outcome) => {
        if (outcome.status === 503) refused += 1;
        return outcome;
      }),
    );
    // The platform answers nothing until every POST was either refused or is held by the platform: the proxy is at
    // its fullest then.
    await expect.poll(() => arrived.length + refused, { timeout: 300_000 }).toBe(CONCURRENT);
    const held = arrived.length;
    arrived.splice(0).forEach((answer) => answer());
    const statuses = (await Promise.all(outcomes)).map((outcome) => outcome.status);
    const after = await memory();

    const growth = after.maxRss - before.rss;
    console.info(
      `proxy memory: rss ${(before.rss / MiB).toFixed(0)} MiB before, peak ${(after.maxRss / MiB).toFixed(0)} MiB after: ` +
        `${(growth / MiB).toFixed(0)} MiB growth; ${held} POSTs held at once, ${refused} answered 503`,
    );
    expect(statuses.filter((status) => status !== 200 && status !== 503)).toEqual([]);
    expect(held).toBeGreaterThanOrEqual(1);
    expect(growth).toBeLessThan(MAX_GROWTH_BYTES);

    const alone = post(url, body);
    await expect.poll(() => arrived.length, { timeout: 60_000 }).toBe(1);
    arrived.shift()!();
    expect((await alone).status).toBe(200);
  }, 600_000);
});
