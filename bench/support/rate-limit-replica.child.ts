import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { PlatformAuthModule, PlatformFetch, type PlatformAuthOptions } from 'nestjs-platform-auth';

/**
 * One replica of the rate-limit measurement: one module on the real clock, sharing its limit with the others through
 * Redis, hammering the emulator's API through `PlatformFetch` (which waits at the module's gate) from `inFlight` loops
 * for `durationMs`, driven over IPC.
 */
interface Setup {
  options: PlatformAuthOptions;
  rateLimit: NonNullable<PlatformAuthOptions['rateLimit']>;
}

const setup = await new Promise<Setup>((resolve) => process.once('message', (message) => resolve(message as Setup)));
const app = await NestFactory.createApplicationContext(
  PlatformAuthModule.forRoot({ ...setup.options, rateLimit: setup.rateLimit }),
  { logger: ['error', 'warn'] },
);
const platformFetch = app.get(PlatformFetch);
const url = `${setup.options.baseUrl}/api/billing`;
// The token and a connection, before the clock starts: a request that waits for a token after its turn came would go
// late, and the requests late together would reach the platform closer than their turns were.
await (await platformFetch.fetch(`${setup.options.baseUrl}/api/unknown`)).arrayBuffer();

process.on('message', (message: { command: 'run'; durationMs: number; inFlight: number }) => {
  const deadline = performance.now() + message.durationMs;
  const counts = { sent: 0, ok: 0, throttled: 0, otherStatus: 0, failed: 0 };
  const loop = async (): Promise<void> => {
    while (performance.now() < deadline) {
      try {
        counts.sent += 1;
        const response = await platformFetch.fetch(url);
        await response.arrayBuffer();
        if (response.status === 200) counts.ok += 1;
        else if (response.status === 429) counts.throttled += 1;
        else counts.otherStatus += 1;
      } catch {
        counts.failed += 1;
      }
    }
  };
  void Promise.all(Array.from({ length: message.inFlight }, loop)).then(() => {
    process.send!(counts);
  });
});
process.on('disconnect', () => {
  void app.close();
});
process.send!({ ready: true });
