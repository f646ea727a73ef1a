import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import type { INestApplication, Type } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenProvider } from 'nestjs-platform-auth';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { expectNoSecrets } from '../support/leak-check.js';
import { restoreEnv } from '../support/environment.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
let platform: PlatformEmulator;
let integration: EmulatedIntegration;
let billing: EmulatedIntegration;
/** Two customer organisations, each an integration of its own, for the tenant route. */
const tenants: Record<string, EmulatedIntegration> = {};
let AppModule: Type;
const saved = { ...process.env };

beforeAll(async () => {
  platform = await PlatformEmulator.start();
  integration = await platform.createIntegration({ name: 'sample-app e2e', permissions: ['Send message'] });
  billing = await platform.createIntegration({ name: 'sample-app billing', permissions: ['Retrieve billing data'] });
  Object.assign(process.env, integration.env, billingEnv(billing));
  for (const tenantId of ['acme', 'globex']) {
    tenants[tenantId] = await platform.createIntegration({ name: `tenant ${tenantId}`, permissions: ['Send message'] });
    Object.assign(process.env, namedEnv(`TENANT_${tenantId.toUpperCase()}`, tenants[tenantId]));
  }
  process.env.SAMPLE_APP_TENANTS = 'acme,globex';
  // Imported once the variables are set, as the launcher does: the app module decides at import which optional
  // modules (the billing integration, user sign-in) it registers.
  ({ AppModule } = await import('../../sample-app/src/app.module.js'));
});

/** The billing integration's variables, as `PLATFORM_BILLING_*`. */
function billingEnv(named: EmulatedIntegration): Record<string, string | undefined> {
  return Object.fromEntries(
    Object.entries(named.env).map(([key, value]) => [key.replace(/^PLATFORM_/, 'PLATFORM_BILLING_'), value]),
  );
}

/** An integration's variables under a name: `PLATFORM_<NAME>_*`. */
function namedEnv(name: string, named: EmulatedIntegration): Record<string, string | undefined> {
  return Object.fromEntries(
    Object.entries(named.env).map(([key, value]) => [key.replace(/^PLATFORM_/, `PLATFORM_${name}_`), value]),
  );
}
afterAll(async () => {
  restoreEnv(saved);
  await platform.close();
});

async function createApp(kind: 'express' | 'fastify'): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  if (kind === 'express') {
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    return app;
  }
  const app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}

describe.each(['express', 'fastify'] as const)('sample app on %s', (kind) => {
  let app: INestApplication;
  beforeAll(async () => {
    platform.resetCounters();
    app = await createApp(kind);
  });
  afterAll(() => app.close());

  it('acquires the first token of each of its integrations while it boots', async () => {
    // The start-up check (on by default): messaging's and billing's, each by its own machineId.
    expect(platform.counters.exchanges).toMatchObject({ total: 2, accepted: 2 });
    const subjects = platform.journal.slice(-2).map((entry) => entry.claims?.sub);
    expect(subjects.sort()).toEqual([integration.machineId, billing.machineId].sort());
  });

  it('sends a message through the authenticated HttpService, with the token of the boot', async () => {
    const response = await request(app.getHttpServer()).post('/messages').send({ to: 'alice', text: 'hi' }).expect(202);
    expect(response.body).toMatchObject({ accepted: true, machineId: integration.machineId });
    expect(platform.counters.exchanges.accepted).toBe(2);
  });

  it('reads billing data through its own named integration, which the platform lets read billing', async () => {
    const { exchanges, apiCalls } = platform.counters;
    await request(app.getHttpServer()).get('/billing').expect(200);
    await request(app.getHttpServer()).get('/billing').expect(200);
    // Both calls use the billing integration's token of the boot (only it may read billing: 200), no exchange.
    expect(platform.counters.exchanges.accepted).toBe(exchanges.accepted);
    expect(platform.counters.apiCalls.ok).toBe(apiCalls.ok + 2);
  });

  it('gets the platform 403 when billing is read through the messaging integration', async () => {
    const response = await request(app.getHttpServer()).get('/billing/with-messaging-integration').expect(200);
    expect(response.body).toEqual({ platformStatus: 403 });
  });

  it("sends as each customer organisation with the tenant's own integration, and 404s an unknown tenant", async () => {
    for (const tenantId of ['acme', 'globex', 'acme']) {
      const response = await request(app.getHttpServer())
        .post(`/tenants/${tenantId}/messages`)
        .send({ to: 'alice', text: `hi from ${tenantId}` })
        .expect(202);
      expect(response.body).toMatchObject({ accepted: true, machineId: tenants[tenantId].machineId });
    }
    const unknown = await request(app.getHttpServer()).post('/tenants/initech/messages').send({ to: 'a', text: 'b' });
    expect(unknown.status).toBe(404);
    expect(unknown.text).toContain("Unknown tenant 'initech'");
  });

  it('reports health through the Terminus indicator without showing the token', async () => {
    const response = await request(app.getHttpServer()).get('/health').expect(200);
    expect(response.body).toMatchObject({ status: 'ok', info: { platform: { status: 'up', state: 'valid' } } });
    const token = await app.get(TokenProvider).getAccessToken();
    expect(response.text).not.toContain(token);
  });
});

describe('sample app /health with a suspended integration', () => {
  it('answers 503 with safe detail once the token must be renewed', async () => {
    const suspended = await platform.createIntegration({ name: 'sample-app suspended' });
    Object.assign(process.env, suspended.env);
    const app = await createApp('express');
    try {
      const send = () => request(app.getHttpServer()).post('/messages').send({ to: 'alice', text: 'hi' });
      await send().expect(202);
      await request(app.getHttpServer()).get('/health').expect(200);
      platform.setIntegrationStatus(suspended.machineId, 'Suspended');
      // The next call gets a 401, and the renewal it forces is refused: the integration is no longer Active.
      expect(platform.revokeAllTokens()).toBeGreaterThan(0);
      expect((await send()).status).toBe(500);
      const response = await request(app.getHttpServer()).get('/health').expect(503);
      expect(response.body).toMatchObject({
        status: 'error',
        error: {
          platform: {
            status: 'down',
            message: expect.stringMatching(/no usable token/),
            lastExchange: { ok: false, reason: 'http_error', status: 400 },
          },
        },
      });
      expectNoSecrets(response.text, [suspended.privateKeyPem, suspended.certificatePem]);
    } finally {
      await app.close();
      Object.assign(process.env, integration.env);
    }
  });
});

describe('the README demo, `npm run demo`: the sample app launcher with --once', () => {
  it('performs one authenticated call against the embedded emulator and exits 0 on its own', async () => {
    const env = Object.fromEntries(Object.entries(saved).filter(([key]) => !key.startsWith('PLATFORM_')));
    // What `npm run demo` runs after `npm run build:sample`, which the run's global set-up has done: building again
    // here would rewrite dist/ under the tests that are reading it.
    const { stdout } = await promisify(execFile)(process.execPath, ['sample-app/dist/launch.js', '--once'], {
      cwd: root,
      env,
    });
    expect(stdout).toMatch(/Embedded platform emulator on http:\/\/127\.0\.0\.1:\d+/);
    expect(stdout).toMatch(/POST http:\/\/127\.0\.0\.1:\d+\/messages -> 202 \{"accepted":true/);
  });
});

describe('the README start command, `npm start`: the sample app launcher', () => {
  it('shows one authenticated call, prints how to sign in as a user in a browser, and serves the sign-in redirect', async () => {
    const env = Object.fromEntries(Object.entries(saved).filter(([key]) => !key.startsWith('PLATFORM_')));
    // Port 0 would leave the redirect URI unknown before start-up; a high fixed one is free on a test machine.
    const port = String(40_000 + (process.pid % 20_000));
    const child = spawn(process.execPath, ['sample-app/dist/launch.js'], {
      cwd: root,
      env: { ...env, PORT: port },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.setEncoding('utf8');
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: string) => {
          stdout += chunk;
          if (stdout.includes('Ctrl+C stops it.')) resolve();
        });
        child.once('exit', (code) => reject(new Error(`the launcher exited (${code}):\n${stdout}`)));
      });
      expect(stdout).toContain(`POST http://127.0.0.1:${port}/messages -> 202 {"accepted":true`);
      expect(stdout).toContain(`open http://127.0.0.1:${port}/login, pick a test user and approve`);
      const login = await fetch(`http://127.0.0.1:${port}/login`, { redirect: 'manual' });
      expect(login.status).toBe(302);
      expect(login.headers.get('location')).toMatch(/\/loginservice\/connect\/authorize\?response_type=code&/);
    } finally {
      child.kill('SIGTERM');
    }
  });
});

describe('shutdown', () => {
  it('leaves no handle open after app.close(): no socket, no timer, even with an exchange in flight', async () => {
    // Runs on dist/, built once for the run, in a process of its own.
    const script = `
      import 'reflect-metadata';
      import { Module } from '@nestjs/common';
      import { NestFactory } from '@nestjs/core';
      import { HttpService } from '@nestjs/axios';
      import { firstValueFrom } from 'rxjs';
      import { PlatformAuthModule, TokenProvider } from 'nestjs-platform-auth';
      const options = JSON.parse(process.env.MODULE_OPTIONS);
      class AppModule {}
      Module({ imports: [PlatformAuthModule.forRoot(options)] })(AppModule);
      const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
      await firstValueFrom(app.get(HttpService).post('/api/messages', { text: 'in flight at close' }));
      const tokens = app.get(TokenProvider);
      tokens.invalidate(await tokens.getAccessToken());
      const inFlight = tokens.getAccessToken().then(() => 'completed', (e) => e.reason);
      await app.close();
      console.error('exchange in flight at close:', await inFlight);
      const open = process.getActiveResourcesInfo().filter((r) => !['TTYWrap', 'PipeWrap'].includes(r));
      console.log(JSON.stringify(open));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      cwd: root,
      env: { ...saved, MODULE_OPTIONS: JSON.stringify(integration.moduleOptions) },
    });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual([]);
  });
});
