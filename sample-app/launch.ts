import 'reflect-metadata';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { bootstrap } from './src/main.js';

/**
 * Starts the sample app. Without PLATFORM_BASE_URL it first starts the embedded platform emulator, registers a
 * fresh integration and points the app at it, so a fresh clone runs with no platform account.
 * `--once`: one authenticated call end to end, then exit (0 on success).
 */
const once = process.argv.includes('--once');
let emulator: PlatformEmulator | undefined;

if (!process.env.PLATFORM_BASE_URL) {
  emulator = await PlatformEmulator.start();
  const integration = await emulator.createIntegration({ name: 'sample-app' });
  Object.assign(process.env, integration.env);
  console.log(
    `Embedded platform emulator on ${emulator.url} (integration ${integration.machineId}, thumbprint ${integration.thumbprint}).`,
  );
}

const app = await bootstrap(once ? 0 : undefined);
const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
const base = `http://127.0.0.1:${port}`;

async function shutdown(): Promise<void> {
  await app.close();
  await emulator?.close();
}

if (once) {
  const response = await fetch(`${base}/messages`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ to: 'demo-recipient', text: 'Hello from the sample app' }),
  });
  const body = await response.text();
  console.log(`POST ${base}/messages -> ${response.status} ${body}`);
  await shutdown();
  process.exitCode = response.status === 202 ? 0 : 1;
} else {
  console.log(`Sample app listening on ${base}. Try:
  curl -s ${base}/health
  curl -s -X POST ${base}/messages -H 'Content-Type: application/json' -d '{"to":"someone","text":"hello"}'
  curl -s ${base}/billing
Ctrl+C stops it.`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void shutdown());
  }
}
