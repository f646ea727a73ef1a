import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedCleanPack } from '../support/packed-package.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | Record<string, string>>;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
  engines: Record<string, string>;
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

function builtFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? builtFiles(path) : [path];
  });
}

/** The package's entry points by name: `nestjs-platform-auth`, `nestjs-platform-auth/testing`, … */
function subpaths(): string[] {
  return Object.keys(pkg.exports)
    .filter((subpath) => subpath !== './package.json')
    .map((subpath) => (subpath === '.' ? 'nestjs-platform-auth' : `nestjs-platform-auth/${subpath.slice(2)}`));
}

/** The package as the run's one `npm pack` ships it, unpacked: never the dist/ other tests are reading. */
const packageDir = mkdtempSync(join(tmpdir(), 'platform-auth-package-'));

function runNode(script: string, type: 'module' | 'commonjs'): string {
  return execFileSync(
    process.execPath,
    [type === 'module' ? '--input-type=module' : '--input-type=commonjs', '-e', script],
    {
      cwd: packageDir,
      encoding: 'utf8',
    },
  );
}

/** `runNode`, without blocking: for scripts that take seconds and can run side by side. */
function runNodeAsync(script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', script],
      { cwd: packageDir, encoding: 'utf8' },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)),
    );
  });
}

describe('the published package', () => {
  beforeAll(async () => {
    const { tarball } = await sharedCleanPack(join(packageDir, '.pack'));
    execFileSync('tar', ['-xzf', tarball, '-C', packageDir, '--strip-components=1']);
    symlinkSync(join(root, 'node_modules'), join(packageDir, 'node_modules'), 'dir');
  }, 600_000);
  afterAll(() => rmSync(packageDir, { recursive: true, force: true }));

  it('states engines, and exports an ES module and a CommonJS build, each with its types first', () => {
    expect(pkg.engines.node).toBe('>=20.19');
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (typeof target === 'string') continue;
      const dir = subpath === '.' ? '' : `${subpath.slice(2)}/`;
      expect(target, subpath).toEqual({
        import: { types: `./dist/${dir}index.d.ts`, default: `./dist/${dir}index.js` },
        require: { types: `./dist/cjs/${dir}index.d.ts`, default: `./dist/cjs/${dir}index.js` },
      });
      for (const condition of Object.values(target)) expect(Object.keys(condition)).toEqual(['types', 'default']);
    }
    expect(pkg.exports['./package.json']).toBe('./package.json');
    // Node and TypeScript read the files under dist/cjs/ as CommonJS, the ones beside them as ES modules.
    expect(JSON.parse(readFileSync(join(packageDir, 'dist/cjs/package.json'), 'utf8'))).toEqual({ type: 'commonjs' });
  });

  it('has every exports target on disk after the build', () => {
    const targets = (target: unknown): string[] =>
      typeof target === 'string' ? [target] : Object.values(target as object).flatMap(targets);
    for (const file of targets(pkg.exports)) expect(existsSync(join(packageDir, file)), file).toBe(true);
  });

  it('loads every entry point in a separate Node process by import() (ES modules) and by require() (CommonJS)', () => {
    const entries = JSON.stringify(subpaths());
    const imported = runNode(
      `const out = {}; for (const entry of ${entries}) { const url = import.meta.resolve(entry); out[entry] = url.slice(url.indexOf('/dist/') + 1); }
       const m = await import('nestjs-platform-auth'); const t = await import('nestjs-platform-auth/testing');
       console.log(JSON.stringify(out), typeof m.PlatformAuthModule, typeof m.platformAuthConfig, typeof t.createTestCredentials);`,
      'module',
    );
    expect(imported.trim()).toBe(
      '{"nestjs-platform-auth":"dist/index.js","nestjs-platform-auth/testing":"dist/testing/index.js",' +
        '"nestjs-platform-auth/testing/msw":"dist/testing/msw/index.js",' +
        '"nestjs-platform-auth/user":"dist/user/index.js","nestjs-platform-auth/terminus":"dist/terminus/index.js",' +
        '"nestjs-platform-auth/outbox":"dist/outbox/index.js"} ' +
        'function function function',
    );
    const required = runNode(
      `const out = {}; for (const entry of ${entries}) { const path = require.resolve(entry); out[entry] = path.slice(path.indexOf('/dist/') + 1); }
       const m = require('nestjs-platform-auth'); const t = require('nestjs-platform-auth/testing');
       console.log(JSON.stringify(out), typeof m.PlatformAuthModule, typeof m.platformAuthConfig, typeof t.createTestCredentials);`,
      'commonjs',
    );
    expect(required.trim()).toBe(
      '{"nestjs-platform-auth":"dist/cjs/index.js","nestjs-platform-auth/testing":"dist/cjs/testing/index.js",' +
        '"nestjs-platform-auth/testing/msw":"dist/cjs/testing/msw/index.js",' +
        '"nestjs-platform-auth/user":"dist/cjs/user/index.js","nestjs-platform-auth/terminus":"dist/cjs/terminus/index.js",' +
        '"nestjs-platform-auth/outbox":"dist/cjs/outbox/index.js"} ' +
        'function function function',
    );
  });

  it('exports the same names from the CommonJS build as from the ES module build', () => {
    const entries = JSON.stringify(subpaths());
    const imported = runNode(
      `const out = {}; for (const entry of ${entries}) out[entry] = Object.keys(await import(entry)).sort();
       console.log(JSON.stringify(out));`,
      'module',
    );
    const required = runNode(
      `const out = {}; for (const entry of ${entries}) out[entry] = Object.keys(require(entry)).sort();
       console.log(JSON.stringify(out));`,
      'commonjs',
    );
    expect(JSON.parse(required)).toEqual(JSON.parse(imported));
  });

  it('the CommonJS build loads no ES module: jose and oauth4webapi are inlined, optional peers are require()d', () => {
    const cjs = join(packageDir, 'dist/cjs');
    const files = builtFiles(cjs).filter((file) => file.endsWith('.js'));
    const problems: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      const name = file.slice(cjs.length + 1);
      if (/\bimport\(/.test(text)) problems.push(`${name}: import()`);
      for (const match of text.matchAll(/\brequire\("([^"]+)"\)/g)) {
        const specifier = match[1];
        if (specifier === 'jose' || specifier === 'oauth4webapi') problems.push(`${name}: require("${specifier}")`);
      }
    }
    expect(problems).toEqual([]);
    // The inlined packages name their version and licence, which ships beside them.
    for (const vendored of ['jose', 'oauth4webapi']) {
      const { version } = JSON.parse(readFileSync(join(root, 'node_modules', vendored, 'package.json'), 'utf8')) as {
        version: string;
      };
      expect(readFileSync(join(cjs, 'vendor', `${vendored}.js`), 'utf8').split('\n', 1)[0]).toBe(
        `/*! ${vendored} ${version} | MIT licence: ./${vendored}.LICENSE.md */`,
      );
      expect(readFileSync(join(cjs, 'vendor', `${vendored}.LICENSE.md`), 'utf8')).toMatch(/MIT License/);
    }
  });

  it('exports exactly the public API: a new or removed name must be a deliberate change to the snapshot', () => {
    const names = runNode(
      `const out = {}; for (const entry of ${JSON.stringify(subpaths())}) out[entry] = Object.keys(await import(entry)).sort();
       console.log(JSON.stringify(out));`,
      'module',
    );
    expect(JSON.parse(names)).toMatchSnapshot();
  });

  it('imports from lib/ only packages that package.json declares as dependencies or peers', () => {
    const declared = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies ?? {})]);
    const builtins = new Set(builtinModules);
    const undeclared: string[] = [];
    for (const file of sourceFiles(join(root, 'lib'))) {
      const text = readFileSync(file, 'utf8');
      const specifiers = [
        ...text.matchAll(/^\s*(?:import|export)\b[^;'"]*?\bfrom\s+['"]([^'"]+)['"]/gm),
        ...text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm),
        ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
      ];
      for (const match of specifiers) {
        const specifier = match[1];
        if (specifier.startsWith('.') || specifier.startsWith('node:') || builtins.has(specifier)) continue;
        const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
        if (!declared.has(name)) undeclared.push(`${file}: ${specifier}`);
        if (specifier !== name && name.startsWith('@nestjs/')) undeclared.push(`${file}: deep import ${specifier}`);
      }
      for (const match of text.matchAll(/\bfrom\s+['"](\.[^'"]+)['"]/g)) {
        if (!match[1].endsWith('.js')) undeclared.push(`${file}: relative import without .js: ${match[1]}`);
      }
    }
    expect(undeclared).toEqual([]);
  });

  /*
   * One process that loads both builds, as an app does when it imports the package and a CommonJS library it uses
   * require()s it: the module comes from one build, the decorators, guard and health indicator a service uses from the
   * other. They meet through tokens from the global symbol registry; a class type of the other build is another
   * class, so code that may meet the other build injects with the decorators.
   */
  describe.concurrent.each([
    { first: 'esm', module: 'esm' },
    { first: 'esm', module: 'cjs' },
    { first: 'cjs', module: 'esm' },
    { first: 'cjs', module: 'cjs' },
  ])('with both builds loaded ($first first), the module from the $module build', ({ first, module }) => {
    it("injects its services into a class written against the other build's decorators, and errors match", async () => {
      const other = module === 'esm' ? 'cjs' : 'esm';
      const output = await runNodeAsync(
        `
        import 'reflect-metadata';
        import { createRequire } from 'node:module';
        import { Injectable, Module } from '@nestjs/common';
        import { NestFactory } from '@nestjs/core';
        import { TerminusModule } from '@nestjs/terminus';
        import { firstValueFrom } from 'rxjs';
        const require = createRequire(process.cwd() + '/package.json');
        const builds = {};
        for (const format of ${JSON.stringify(first === 'esm' ? ['esm', 'cjs'] : ['cjs', 'esm'])}) {
          const load = async (entry) => (format === 'esm' ? import(entry) : require(entry));
          builds[format] = {
            main: await load('nestjs-platform-auth'),
            testing: await load('nestjs-platform-auth/testing'),
            terminus: await load('nestjs-platform-auth/terminus'),
            user: await load('nestjs-platform-auth/user'),
          };
        }
        const provider = builds.${module};
        const consumer = builds.${other};

        class Billing {
          constructor(tokens, http, httpByToken, named, health, userAuth, sessions, byClass) {
            Object.assign(this, { tokens, http, httpByToken, named, health, userAuth, sessions, byClass });
          }
        }
        Injectable()(Billing);
        Reflect.defineMetadata('design:paramtypes', [consumer.main.TokenProvider, consumer.main.PlatformHttpService,
          Object, Object, consumer.terminus.PlatformAuthHealthIndicator, consumer.user.PlatformUserAuth,
          consumer.user.PlatformUserSessions, provider.main.TokenProvider], Billing);
        consumer.main.InjectTokenProvider()(Billing, undefined, 0);
        consumer.main.InjectPlatformHttpService()(Billing, undefined, 1);
        consumer.main.InjectPlatformHttpService()(Billing, undefined, 2);
        consumer.main.InjectTokenProvider('billing')(Billing, undefined, 3);
        consumer.user.InjectPlatformUserAuth()(Billing, undefined, 5);
        consumer.user.InjectPlatformUserSessions()(Billing, undefined, 6);

        const platform = await provider.testing.PlatformEmulator.start();
        const integration = await platform.createIntegration();
        platform.registerUserClient({ clientId: 'web-app', redirectUris: ['http://127.0.0.1:9/callback'] });
        class AppModule {}
        Module({
          imports: [
            TerminusModule,
            provider.main.PlatformAuthModule.forRoot(integration.moduleOptions),
            // No token at boot: the fault below must meet this integration's first exchange.
            provider.main.PlatformAuthModule.forRoot({ name: 'billing', ...integration.moduleOptions, startupCheck: 'off' }),
            provider.user.PlatformUserAuthModule.forRoot({ baseUrl: platform.url, clientId: 'web-app',
              redirectUri: 'http://127.0.0.1:9/callback', stateSecret: 'uP4g0cF8vJm2Qx7Rz1Kd9Wn3Ys6Tb5Ha' }),
          ],
          providers: [Billing, consumer.terminus.PlatformAuthHealthIndicator, consumer.user.PlatformUserGuard],
        })(AppModule);
        const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
        const billing = app.get(Billing);
        const response = await firstValueFrom(billing.http.get('/api/billing'));
        const health = await billing.health.isHealthy('platform-auth');
        const { url } = await billing.userAuth.createAuthorizationRequest();
        platform.injectFault({ kind: 'status', status: 400, body: { error: 'invalid_client' } });
        const error = await billing.named.getAccessToken().catch((caught) => caught);
        console.log(JSON.stringify({
          twoBuilds: consumer.main.TokenProvider !== provider.main.TokenProvider,
          call: response.status,
          sameHttpService: billing.httpByToken === billing.http,
          namedIsItsOwn: billing.named !== billing.tokens,
          byClassOfItsBuild: billing.byClass === billing.tokens,
          sessionCookie: billing.sessions.sessionCookieName,
          guard: app.get(consumer.user.PlatformUserGuard) instanceof consumer.user.PlatformUserGuard,
          health: health['platform-auth'].status,
          userSignIn: new URL(url).pathname,
          error: {
            instanceOfTheOtherBuildsClass: error instanceof consumer.main.TokenExchangeError,
            instanceOfTheOtherBuildsBase: error instanceof consumer.main.PlatformAuthError,
            instanceOfAnotherClass: error instanceof consumer.main.PlatformAuthConfigError,
          },
        }));
        await app.close();
        await platform.close();
        `,
      );
      expect(JSON.parse(output.trim().split('\n').at(-1)!)).toEqual({
        twoBuilds: true,
        call: 200,
        sameHttpService: true,
        namedIsItsOwn: true,
        byClassOfItsBuild: true,
        sessionCookie: '__Host-platform_user_session',
        guard: true,
        health: 'up',
        userSignIn: '/loginservice/connect/authorize',
        error: {
          instanceOfTheOtherBuildsClass: true,
          instanceOfTheOtherBuildsBase: true,
          instanceOfAnotherClass: false,
        },
      });
    });
  });
});
