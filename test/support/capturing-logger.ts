import type { LoggerService } from '@nestjs/common';

export interface LoggedLine {
  readonly level: 'log' | 'warn' | 'error' | 'debug' | 'verbose' | 'fatal';
  readonly message: string;
}

/** A Nest logger that keeps what it is given, so a test can assert on its warnings instead of printing them. */
export class CapturingLogger implements LoggerService {
  readonly lines: LoggedLine[] = [];

  log(message: unknown): void {
    this.keep('log', message);
  }
  warn(message: unknown): void {
    this.keep('warn', message);
  }
  error(message: unknown): void {
    this.keep('error', message);
  }
  debug(message: unknown): void {
    this.keep('debug', message);
  }
  verbose(message: unknown): void {
    this.keep('verbose', message);
  }
  fatal(message: unknown): void {
    this.keep('fatal', message);
  }

  /** The messages logged at `level`. */
  messages(level: LoggedLine['level'] = 'warn'): string[] {
    return this.lines.filter((line) => line.level === level).map((line) => line.message);
  }

  private keep(level: LoggedLine['level'], message: unknown): void {
    this.lines.push({ level, message: message instanceof Error ? message.message : String(message) });
  }
}
