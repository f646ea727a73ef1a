import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedCleanPack } from '../support/packed-package.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'platform-auth-install-'));
const app = join(work, 'app');

/**
 * The packed package (the run's one `npm pack` of a clean tree) installed into an app that has every peer but
 * `@opentelemetry/api`, offline: the peers are linked from this repository's node_modules, minus OpenTelemetry.
 */
describe('the packed package in an app without @opentelemetry/api', () => {
  beforeAll(async () => {
    const { tarball } = await sharedCleanPack(work);
    const modules = join(app, 'node_modules');
    mkdirSync(join(modules, 'nestjs-platform-auth'), { recursive: true });
    execFileSync('tar', ['-xzf', tarball, '-C', join(modules, 'nestjs-platform-auth'), '--strip-components=1']);
    for (const entry of readdirSync(join(root, 'node_modules'))) {
      if (entry === '@opentelemetry' || entry === '.bin' || entry.startsWith('.')) continue;
      symlinkSync(join(root, 'node_modules', entry), join(modules, entry), 'dir');
    }
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  }, 600_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('starts the module, exchanges a token and publishes telemetry on the diagnostics channel only', () => {
    const script = `
      import 'reflect-metadata';
      import { subscribe } from 'node:diagnostics_channel';
      import { Module } from '@nestjs/common';
      import { NestFactory } from '@nestjs/core';
      import { PlatformAuthModule, TokenProvider, PLATFORM_AUTH_DIAGNOSTICS_CHANNEL } from 'nestjs-platform-auth';
      import { PlatformEmulator } from 'nestjs-platform-auth/testing';
      const otel = await import('@opentelemetry/api').then(() => 'installed', (error) => error.code);
      const events = [];
      subscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, (event) => events.push(event.event));
      const platform = await PlatformEmulator.start();
      const integration = await platform.createIntegration();
      class AppModule {}
      Module({ imports: [PlatformAuthModule.forRoot(integration.moduleOptions)] })(AppModule);
      const context = await NestFactory.createApplicationContext(AppModule, { logger: false });
      const tokens = context.get(TokenProvider);
      await tokens.getAccessToken();
      const state = tokens.status().state;
      await context.close();
      await platform.close();
      console.log(JSON.stringify({ otel, state, events }));
    `;
    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: app,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(JSON.parse(output.trim().split('\n').at(-1)!)).toEqual({
      otel: 'ERR_MODULE_NOT_FOUND',
      state: 'valid',
      events: ['exchange:start', 'exchange:end'],
    });
  }, 90_000);

  it('ships the terminus entry point in the tarball', () => {
    const files = readdirSync(join(app, 'node_modules', 'nestjs-platform-auth', 'dist', 'terminus'));
    expect(files).toEqual(expect.arrayContaining(['index.js', 'index.d.ts', 'health.indicator.js']));
  });
});
