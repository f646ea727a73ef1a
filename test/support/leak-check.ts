import { inspect } from 'node:util';
import { ConsoleLogger } from '@nestjs/common';
import { expect } from 'vitest';
import { captureOutputSync } from './capture-output.js';

/** Every way a user might render an error: JSON, inspect (deep, and with hidden properties), toString, Nest's logger. */
export function renderEverywhere(value: unknown): string[] {
  const logger = new ConsoleLogger('LeakSweep');
  const jsonLogger = new ConsoleLogger('LeakSweep', { json: true });
  const logged = captureOutputSync(() => {
    logger.error(value);
    if (value instanceof Error) logger.error(value.message, value.stack);
    logger.warn(value);
    jsonLogger.error(value);
  });
  return [
    safeJson(value),
    inspect(value, { depth: 10 }),
    inspect(value, { depth: 10, showHidden: true }),
    String(value),
    value instanceof Error ? (value.stack ?? '') : '',
    logged,
  ];
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch (error) {
    return `unserialisable: ${(error as Error).message}`;
  }
}

/** Fails when any secret (or a 40-character slice of one) shows up in any rendering of `value`. */
export function expectNoSecrets(value: unknown, secrets: readonly (string | undefined)[]): void {
  const renderings = renderEverywhere(value).join('\n');
  for (const secret of secrets) {
    if (!secret) continue;
    for (const needle of secretNeedles(secret)) {
      expect(renderings.includes(needle), `secret fragment ${needle.slice(0, 6)}… leaked`).toBe(false);
    }
  }
}

/** A secret itself, and for long ones (PEM bodies, JWTs) a few slices, so partial leaks are caught too. */
function secretNeedles(secret: string): string[] {
  const lines = secret.split('\n').filter((line) => line.length >= 40 && !line.startsWith('-----'));
  if (lines.length > 0) return lines.slice(0, 5);
  if (secret.length <= 60) return [secret];
  return [
    secret.slice(0, 40),
    secret.slice(Math.floor(secret.length / 2) - 20, Math.floor(secret.length / 2) + 20),
    secret.slice(-40),
  ];
}
