import 'reflect-metadata';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PlatformEmulator } from 'nestjs-platform-auth/testing';
import { startEmbeddedPlatform } from './embedded-platform.js';

/**
 * Starts the sample app. Without PLATFORM_BASE_URL it first starts the embedded platform emulator, registers a
 * fresh integration (and, unless `--once`, a user client for sign-in) and points the app at it, so a fresh clone
 * runs with no platform account.
 * With the embedded emulator it makes one authenticated call through the app and prints it, then what to try.
 * `--once`: that call end to end, then exit (0 on success).
 */
const once = process.argv.includes('--once');
const requestedPort = once ? 0 : Number(process.env.PORT ?? 3000);
let emulator: PlatformEmulator | undefined;

if (!process.env.PLATFORM_BASE_URL) emulator = await startEmbeddedPlatform(once ? undefined : requestedPort);

if (process.env.PLATFORM_TOKEN_STORE_URL) {
  // Never the URL itself: it may hold the Redis password.
  console.log(
    'Sharing tokens with other replicas through the Redis at PLATFORM_TOKEN_STORE_URL (docs/shared-store.md).',
  );
}

// Imported only now: the app module decides at import whether user sign-in is configured.
const { bootstrap } = await import('./src/main.js');
const app = await bootstrap(requestedPort);
const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
const base = `http://127.0.0.1:${port}`;

async function shutdown(): Promise<void> {
  await app.close();
  await emulator?.close();
}

/** One authenticated call through the app: POST /messages, which sends to the platform with the module's token. */
async function authenticatedCall(): Promise<number> {
  const response = await fetch(`${base}/messages`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ to: 'demo-recipient', text: 'Hello from the sample app' }),
  });
  const body = await response.text();
  console.log(`POST ${base}/messages -> ${response.status} ${body}`);
  return response.status;
}

if (once) {
  const status = await authenticatedCall();
  await shutdown();
  process.exitCode = status === 202 ? 0 : 1;
} else {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void shutdown());
  }
  console.log(`Sample app listening on ${base}.`);
  // Against the embedded emulator only: against a real platform this would send a real message.
  if (emulator) {
    console.log('One authenticated call through it, to show it works:');
    await authenticatedCall();
  }
  console.log(`Try:
  curl -s ${base}/health
  curl -s -X POST ${base}/messages -H 'Content-Type: application/json' -d '{"to":"someone","text":"hello"}'
  curl -s ${base}/billing                              # through the billing integration
  curl -s ${base}/billing/with-messaging-integration   # the wrong integration: the platform answers 403${
    process.env.SAMPLE_APP_TENANTS
      ? `
  curl -s -X POST ${base}/tenants/acme/messages -H 'Content-Type: application/json' -d '{"to":"someone","text":"hello"}'
                                                       # as a customer organisation: its own integration`
      : ''
  }${
    process.env.PLATFORM_USER_CLIENT_ID
      ? `
Sign in as a user in a browser: open ${base}/login, pick a test user and approve; you land on ${base}/me,
which calls the platform as that user (${base}/logout signs out).`
      : ''
  }
Ctrl+C stops it.`);
}
