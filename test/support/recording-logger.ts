import type { LoggerService } from '@nestjs/common';

/** A Nest logger that keeps what it is given, so a test asserts on the warnings it is about and prints nothing. */
export class RecordingLogger implements LoggerService {
  readonly entries: { level: 'log' | 'warn' | 'error' | 'debug' | 'verbose'; message: string }[] = [];

  log(message: unknown): void {
    this.entries.push({ level: 'log', message: String(message) });
  }
  warn(message: unknown): void {
    this.entries.push({ level: 'warn', message: String(message) });
  }
  error(message: unknown): void {
    this.entries.push({ level: 'error', message: String(message) });
  }
  debug(message: unknown): void {
    this.entries.push({ level: 'debug', message: String(message) });
  }
  verbose(message: unknown): void {
    this.entries.push({ level: 'verbose', message: String(message) });
  }

  messages(level: 'log' | 'warn' | 'error'): string[] {
    return this.entries.filter((entry) => entry.level === level).map((entry) => entry.message);
  }
}
