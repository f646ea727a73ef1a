import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedCleanPack, type PackedPackage } from '../support/packed-package.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'platform-auth-axios-range-'));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  peerDependencies: Record<string, string>;
  dependencies: Record<string, string>;
};
const range = manifest.peerDependencies.axios;

/** The lowest version of a caret range is the version it names; anything else must be handled here first. */
function lowestOf(caret: string): string {
  const match = /^\^(\d+\.\d+\.\d+)$/.exec(caret);
  if (!match)
    throw new Error(`the axios peer range "${caret}" is not a caret range; teach this test its lowest version`);
  return match[1];
}

/** The newest published version inside the range, as npm resolves it today. */
function newestOf(caret: string): string {
  const listed = JSON.parse(
    execFileSync('npm', ['view', `axios@${caret}`, 'version', '--json'], { encoding: 'utf8' }),
  ) as string | string[];
  return Array.isArray(listed) ? listed.at(-1)! : listed;
}

/**
 * An app with the packed package, axios at `version` (installed by npm, with its own dependencies), a copy of
 * @nestjs/axios that resolves that axios, and every other peer linked from this repository.
 */
function appWithAxios(packed: PackedPackage, version: string): string {
  const app = join(work, `app-${version}`);
  const modules = join(app, 'node_modules');
  mkdirSync(join(modules, 'nestjs-platform-auth'), { recursive: true });
  mkdirSync(join(modules, '@nestjs'), { recursive: true });
  execFileSync('tar', ['-xzf', packed.tarball, '-C', join(modules, 'nestjs-platform-auth'), '--strip-components=1']);
  for (const entry of readdirSync(join(root, 'node_modules'))) {
    if (['axios', '@nestjs', 'nestjs-platform-auth', '.bin'].includes(entry) || entry.startsWith('.')) continue;
    symlinkSync(join(root, 'node_modules', entry), join(modules, entry), 'dir');
  }
  for (const entry of readdirSync(join(root, 'node_modules', '@nestjs'))) {
    const source = join(root, 'node_modules', '@nestjs', entry);
    // Copied, not linked: a link resolves its imports from its real place, where this repository's axios is.
    if (entry === 'axios') cpSync(source, join(modules, '@nestjs', entry), { recursive: true });
    else symlinkSync(source, join(modules, '@nestjs', entry), 'dir');
  }
  const install = join(work, `axios-${version}`);
  mkdirSync(install);
  writeFileSync(join(install, 'package.json'), JSON.stringify({ name: 'axios-install', private: true }));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', `axios@${version}`], {
    cwd: install,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  symlinkSync(join(install, 'node_modules', 'axios'), join(modules, 'axios'), 'dir');
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  return app;
}

const script = `
  import 'reflect-metadata';
  import { createServer } from 'node:http';
  import { createRequire } from 'node:module';
  import { Module } from '@nestjs/common';
  import { NestFactory } from '@nestjs/core';
  import { firstValueFrom } from 'rxjs';
  import { PlatformAuthModule, PlatformHttpService } from 'nestjs-platform-auth';
  import { PlatformEmulator } from 'nestjs-platform-auth/testing';
  const require = createRequire(import.meta.url);
  const fromLibrary = createRequire(require.resolve('nestjs-platform-auth'))('axios/package.json').version;
  const fromNest = createRequire(require.resolve('@nestjs/axios'))('axios/package.json').version;
  const platform = await PlatformEmulator.start();
  const integration = await platform.createIntegration();
  class AppModule {}
  Module({ imports: [PlatformAuthModule.forRoot(integration.moduleOptions)] })(AppModule);
  const context = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const http = context.get(PlatformHttpService);
  const first = (await firstValueFrom(http.get('/api/billing'))).status;
  platform.revokeAllTokens();
  const afterRevocation = (await firstValueFrom(http.get('/api/billing'))).status;
  const viaFetch = (await firstValueFrom(http.get('/api/billing', { adapter: 'fetch' }))).status;
  platform.setPermissions(integration.machineId, ['Send message']);
  const error = await firstValueFrom(http.get('/api/billing')).catch((caught) => caught);
  const refused = {
    isAxiosError: error.isAxiosError,
    status: error.response?.status,
    authorization: error.config?.headers?.Authorization,
  };
  const counters = { exchanges: platform.counters.exchanges.accepted, api: platform.counters.apiCalls };
  // Unsubscribing before the response cancels the request, through each adapter's own use of the cancel token.
  const unsubscribed = {};
  for (const adapter of ['http', 'fetch']) {
    let arrived;
    let closed;
    const arrival = new Promise((resolve) => (arrived = resolve));
    const closing = new Promise((resolve) => (closed = resolve));
    const held = createServer((_req, res) => {
      res.on('close', () => closed('closed'));
      arrived();
    });
    await new Promise((resolve) => held.listen(0, '127.0.0.1', resolve));
    const subscription = http
      .get('http://127.0.0.1:' + held.address().port + '/held', { adapter })
      .subscribe({ error: () => undefined });
    await arrival;
    subscription.unsubscribe();
    unsubscribed[adapter] = await closing;
    held.close();
  }
  await context.close();
  await platform.close();
  console.log(JSON.stringify({ fromLibrary, fromNest, first, afterRevocation, viaFetch, refused, counters, unsubscribed }));
`;

/**
 * axios is a peer with a range: the packed package works with the lowest and the newest axios of that range, a
 * real authenticated call against the emulator each (the 401 re-send, both adapters, a refused call's error shape,
 * a call cancelled by unsubscribing).
 */
describe('the packed package with the lowest and the newest axios of its peer range', () => {
  let packed: PackedPackage;
  beforeAll(async () => {
    packed = await sharedCleanPack(work);
  }, 600_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('axios is a peer with a caret range, and every runtime dependency has a caret range too', () => {
    expect(range).toMatch(/^\^1\.\d+\.\d+$/);
    expect(manifest.dependencies.axios).toBeUndefined();
    for (const [name, wanted] of Object.entries(manifest.dependencies)) expect(wanted, name).toMatch(/^\^/);
  });

  it.each([
    ['lowest', () => lowestOf(range)],
    ['newest', () => newestOf(range)],
  ])(
    'the %s axios of the range',
    (_which, version) => {
      const wanted = version();
      const app = appWithAxios(packed, wanted);
      const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: app,
        encoding: 'utf8',
        timeout: 90_000,
      });
      expect(JSON.parse(output.trim().split('\n').at(-1)!)).toEqual({
        fromLibrary: wanted,
        fromNest: wanted,
        first: 200,
        afterRevocation: 200,
        viaFetch: 200,
        refused: { isAxiosError: true, status: 403, authorization: 'Bearer [REDACTED]' },
        counters: { exchanges: 2, api: expect.objectContaining({ ok: 3, unauthorized: 1, forbidden: 1 }) },
        unsubscribed: { http: 'closed', fetch: 'closed' },
      });
    },
    300_000,
  );
});
