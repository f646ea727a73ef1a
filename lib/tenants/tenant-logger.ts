import type { LoggerService } from '@nestjs/common';
import { describeTenant } from '../util/remote-text.util.js';

/**
 * The registry's logger for one tenant: every line the tenant's integration writes (its start-up line, a failed
 * exchange, a renewal warning) starts with `Tenant '<id>': `, the id escaped and bounded, so an operator can tell
 * which tenant it is about. The registry's name stays the logger's context. Methods on the prototype: a resident
 * tenant holds one small object, not a closure per level.
 */
export class TenantLogger implements LoggerService {
  readonly #logger: LoggerService;
  readonly #prefix: string;

  constructor(logger: LoggerService, tenantId: string) {
    this.#logger = logger;
    this.#prefix = `Tenant ${describeTenant(tenantId)}: `;
  }

  log(message: unknown, ...rest: unknown[]): void {
    this.#logger.log(this.#line(message), ...rest);
  }

  error(message: unknown, ...rest: unknown[]): void {
    this.#logger.error(this.#line(message), ...rest);
  }

  warn(message: unknown, ...rest: unknown[]): void {
    this.#logger.warn(this.#line(message), ...rest);
  }

  debug(message: unknown, ...rest: unknown[]): void {
    this.#logger.debug?.(this.#line(message), ...rest);
  }

  verbose(message: unknown, ...rest: unknown[]): void {
    this.#logger.verbose?.(this.#line(message), ...rest);
  }

  fatal(message: unknown, ...rest: unknown[]): void {
    this.#logger.fatal?.(this.#line(message), ...rest);
  }

  #line(message: unknown): unknown {
    return typeof message === 'string' ? this.#prefix + message : message;
  }
}
