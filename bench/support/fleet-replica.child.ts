import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { PlatformAuthModule, TokenProvider, type PlatformAuthOptions } from 'nestjs-platform-auth';
import { FakeClock } from 'nestjs-platform-auth/testing';

/** One replica of a bench fleet: one module instance on a FakeClock the parent moves, driven over IPC. */
interface Setup {
  startMs: number;
  options: PlatformAuthOptions;
}

const setup = await new Promise<Setup>((resolve) => process.once('message', (message) => resolve(message as Setup)));
const clock = new FakeClock(setup.startMs);
// Cold, like the fleet of the tests: the bench counts and times the fleet's first calls, not its boot.
const app = await NestFactory.createApplicationContext(
  PlatformAuthModule.forRoot({ startupCheck: 'off', ...setup.options, clock }),
  {
    logger: ['error', 'warn'],
  },
);
const tokens = app.get(TokenProvider);

process.on('message', (message: { command: 'get' | 'advance'; ms?: number }) => {
  if (message.command === 'advance') {
    clock.advance(message.ms!);
    process.send!({ done: true });
    return;
  }
  const startedAt = performance.now();
  tokens.getAccessToken().then(
    (token) => process.send!({ token, ms: performance.now() - startedAt }),
    (error: Error) => process.send!({ error: error.message }),
  );
});
process.on('disconnect', () => void app.close());
process.send!({ ready: true });
