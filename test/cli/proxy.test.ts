import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { JWT_SHAPE, startBin, startCli, untilJson, type RunningCli } from './cli-harness.js';

// `platform-auth proxy` in this process (runCli) against an emulator in this process; every request goes over real
// sockets, through the proxy's server, the module's PlatformFetch and the emulator's token endpoint and API.

let platform: PlatformEmulator;
let integration: EmulatedIntegration;
const running: RunningCli[] = [];

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  integration = await platform.createIntegration({ name: 'orders' });
});
afterAll(async () => {
  await Promise.all(running.map((cli) => cli.stop()));
  await platform.close();
});

interface StartReport {
  readonly url: string;
  readonly keyRequired: boolean;
  readonly key: string | null;
}

/** The proxy for `env` (default: the emulator's integration), the address it listens on and the key it made. */
async function proxy(
  env: Record<string, string> = integration.env,
  args: string[] = [],
): Promise<{ cli: RunningCli; url: string; report: StartReport }> {
  const cli = startCli(['proxy', '--port', '0', '--no-env-file', '--json', ...args], env);
  running.push(cli);
  const report = await started(cli);
  return { cli, url: report.url, report };
}

/** What a starting proxy prints; what it printed instead when it did not start. */
async function started(cli: RunningCli): Promise<StartReport> {
  const report = await untilJson<Partial<StartReport>>(cli);
  if (report.url === undefined) throw new Error(`the proxy did not start: ${cli.stdout()}${cli.stderr()}`);
  return report as StartReport;
}

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

/** One request as a client writes it, Host and request target included (fetch would set both itself). */
function send(url: string, target: string, { method = 'GET', headers = {}, body = '' } = {}): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: hostname, port, method, path: target, headers, setHost: !('host' in headers) },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    req.end(body || undefined);
  });
}

describe('platform-auth proxy', () => {
  it("forwards a path to the platform with the integration's token, and drops an Authorization the client sent", async () => {
    const { url } = await proxy();
    const billing = await fetch(`${url}/api/billing`, { headers: { authorization: 'Bearer not-the-token' } });
    expect(billing.status).toBe(200);
    expect(await billing.json()).toMatchObject({ machineId: integration.machineId });

    const sent = await fetch(`${url}/api/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ to: 'someone', text: 'through the proxy' }),
    });
    expect(sent.status).toBe(202);
    expect(await sent.json()).toMatchObject({ message: { to: 'someone', text: 'through the proxy' } });
  });

  it('after a 401 renews the token once and sends the request again, as the module does', async () => {
    const { url } = await proxy();
    expect((await fetch(`${url}/api/billing`)).status).toBe(200);
    const exchanges = platform.counters.exchanges.accepted;
    expect(platform.revokeAllTokens()).toBeGreaterThan(0);
    const again = await fetch(`${url}/api/billing`, { method: 'GET' });
    expect(again.status).toBe(200);
    expect(platform.counters.exchanges.accepted).toBe(exchanges + 1);
  });

  it("refuses what would take the token to another origin, a name that is not the proxy's, a browser and TRACE", async () => {
    const { url } = await proxy();
    const { host } = new URL(url);
    const refused: Array<[string, Parameters<typeof send>[2], number, string]> = [
      ['/api/billing', { headers: { host: 'evil.example' } }, 400, 'invalid_host'],
      ['/api/billing', { headers: { host: `evil.example:${new URL(url).port}` } }, 400, 'invalid_host'],
      ['/api/billing', { headers: { host: `127.0.0.1.nip.io:${new URL(url).port}` } }, 400, 'invalid_host'],
      ['http://evil.example/api/billing', {}, 400, 'invalid_target'],
      [`http://${host}/api/billing`, {}, 400, 'invalid_target'],
      ['//evil.example/api/billing', {}, 400, 'invalid_target'],
      ['/\\evil.example/api/billing', {}, 400, 'invalid_target'],
      ['/api/billing', { headers: { origin: 'https://evil.example' } }, 403, 'browser_refused'],
      ['/api/billing', { headers: { 'sec-fetch-site': 'cross-site' } }, 403, 'browser_refused'],
      ['/api/billing', { method: 'TRACE' }, 405, 'method_not_allowed'],
    ];
    const before = platform.counters.apiCalls.total;
    for (const [target, init, status, error] of refused) {
      const answer = await send(url, target, init);
      expect([answer.status, answer.text], target).toEqual([status, expect.stringContaining(`"error":"${error}"`)]);
    }
    // An authority (`OPTIONS evil.example:443`) never reaches the proxy: Node's parser answers 400 itself.
    expect((await send(url, 'evil.example:443', { method: 'OPTIONS' })).status).toBe(400);
    expect(platform.counters.apiCalls.total).toBe(before);

    // Encoded dot segments stay a path on the platform's origin: the platform, not another host, answers.
    const encoded = await send(url, '/api/..%2f..%2fadmin');
    expect(encoded.status).toBe(404);
    expect(encoded.text).toContain('no route /api/..%2f..%2fadmin');
    expect((await send(url, '/api/billing', { headers: { host: `localhost:${new URL(url).port}` } })).status).toBe(200);
  });

  it('answers a token it cannot get with a typed 502 that names the cause and holds no secret', async () => {
    const { url } = await proxy({
      ...(integration.env as unknown as Record<string, string>),
      PLATFORM_MACHINE_ID: 'someone-else',
    });
    const answer = await send(url, '/api/billing');
    expect(answer.status).toBe(502);
    const body = JSON.parse(answer.text) as Record<string, unknown>;
    expect(body).toMatchObject({
      error: 'token_unavailable',
      code: 'PLATFORM_AUTH_TOKEN_EXCHANGE',
      reason: 'http_error',
      status: 400,
      oauthError: 'invalid_client',
      hint: expect.stringContaining('machineId') as unknown,
    });
    expect(answer.text).not.toMatch(JWT_SHAPE);
    expect(answer.text).not.toContain('PRIVATE KEY');
  });

  it('listens on another address only when --host says so, with a key it makes and prints, and warns', async () => {
    const { cli, url, report } = await proxy(undefined, ['--host', '0.0.0.0']);
    expect(cli.stderr()).toContain(
      `warning: listening on 0.0.0.0, not loopback: anyone who can reach ${url} and has its key calls the platform`,
    );
    expect(report).toMatchObject({ keyRequired: true, key: expect.stringMatching(/^[\w-]{43}$/) as unknown });
    const key = report.key!;
    const port = new URL(url).port;
    const calls = platform.counters.apiCalls.total;
    // What a page on the network makes a browser send to a plain-http address: no Origin, no Sec-Fetch-*.
    const simpleGet = await send(`http://127.0.0.1:${port}`, '/api/billing', { headers: { host: `0.0.0.0:${port}` } });
    expect([simpleGet.status, simpleGet.text]).toEqual([403, expect.stringContaining('"error":"proxy_key_required"')]);
    expect(platform.counters.apiCalls.total).toBe(calls);
    const withKey = await send(`http://127.0.0.1:${port}`, '/api/billing', {
      headers: { host: `127.0.0.1:${port}`, 'x-platform-proxy-key': key },
    });
    expect(withKey.status).toBe(200);
    const rebound = await send(`http://127.0.0.1:${port}`, '/api/billing', {
      headers: { host: `attacker.example:${port}`, 'x-platform-proxy-key': key },
    });
    expect(rebound.status).toBe(400);
    // A key made for one run is not the next run's.
    const next = await proxy(undefined, ['--host', '0.0.0.0']);
    expect(next.report.key).not.toBe(key);
    expect(cli.stderr() + next.cli.stderr()).not.toContain(key);
  });

  it('takes its key from PLATFORM_PROXY_KEY, on loopback too, and never prints it; refuses a weak one', async () => {
    const key = 'f3a1c9e07b2d4e6a8c0b1d3f5e7a9c2b4d6f8e0a1c3b5d7f';
    const { cli, url, report } = await proxy({ ...integration.env, PLATFORM_PROXY_KEY: key });
    expect(report).toMatchObject({ keyRequired: true, key: null });
    expect((await send(url, '/api/billing')).status).toBe(403);
    expect((await send(url, '/api/billing', { headers: { 'x-platform-proxy-key': key } })).status).toBe(200);
    expect(cli.stdout() + cli.stderr()).not.toContain(key);

    for (const weak of ['short', 'aaaaaaaaaaaaaaaaaaaaaaaa', 'with a space in the middle of it']) {
      const refused = await startCli(['proxy', '--port', '0', '--no-env-file'], {
        ...integration.env,
        PLATFORM_PROXY_KEY: weak,
      }).result;
      expect(refused.code, weak).toBe(1);
      expect(refused.stderr).toContain('PLATFORM_PROXY_KEY must be at least 16 printable ASCII characters');
      expect(refused.stdout + refused.stderr).not.toContain(weak);
    }
  });

  it('prints the key and the curl line that carries it, off loopback', async () => {
    const cli = startCli(['proxy', '--port', '0', '--no-env-file', '--host', '0.0.0.0'], integration.env);
    running.push(cli);
    await cli.until((stdout) => stdout.includes('Running until'));
    const key = /key {10}(\S+)/.exec(cli.stdout())?.[1];
    expect(key).toMatch(/^[\w-]{43}$/);
    expect(cli.stdout()).toContain(`curl -H "X-Platform-Proxy-Key: ${key}" http://0.0.0.0:`);
  });

  it('stops on SIGTERM: closes its port and the integration, exit 0', async () => {
    const { cli, url } = await proxy();
    expect((await fetch(`${url}/api/billing`)).status).toBe(200);
    const stopped = await cli.stop('SIGTERM');
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).toContain('SIGTERM: proxy closed.');
    await expect(fetch(`${url}/api/billing`)).rejects.toThrow();
  });
});

describe('the proxy bin, with curl as its client', () => {
  it("forwards curl's request with the token instead of curl's, refuses an absolute target, and exits 0 on SIGTERM", async () => {
    const curl = async (...args: string[]) =>
      (await promisify(execFile)('curl', ['-sS', '-w', ' %{http_code}', ...args])).stdout;
    const bin = startBin(['proxy', '--port', '0', '--no-env-file', '--json'], {
      env: integration.env as unknown as Record<string, string>,
    });
    const { url } = await started(bin);
    const billing = await curl('-H', 'Authorization: Bearer from-curl', `${url}/api/billing`);
    expect(billing).toMatch(/ 200$/);
    expect(billing).toContain(`"machineId":"${integration.machineId}"`);
    const absolute = await curl('--request-target', `${platform.url}/api/billing`, `${url}/`);
    expect(absolute).toMatch(/"error":"invalid_target".* 400$/);
    const stopped = await bin.stop('SIGTERM');
    expect([stopped.code, stopped.stderr]).toEqual([0, expect.stringContaining('SIGTERM: proxy closed.')]);
  });
});
