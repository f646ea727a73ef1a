import type { LoggerService } from '@nestjs/common';
import { describeTenant } from '../util/tenant-text.util.js';

type Level = 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';
const LEVELS: readonly Level[] = ['log', 'error', 'warn', 'debug', 'verbose', 'fatal'];

/**
 * The registry's logger for one tenant: every line the tenant's integration writes (its start-up line, a failed
 * exchange, a renewal warning) starts with `Tenant '<id>': `, the id escaped and bounded, so an operator can tell
 * which tenant it is about. The registry's name stays the logger's context.
 */
export function tenantLogger(logger: LoggerService, tenantId: string): LoggerService {
  const prefix = `Tenant ${describeTenant(tenantId)}: `;
  const prefixed: Partial<Record<Level, (message: unknown, ...rest: unknown[]) => unknown>> = {};
  for (const level of LEVELS) {
    if (logger[level] === undefined) continue;
    prefixed[level] = (message, ...rest) =>
      logger[level]!(typeof message === 'string' ? prefix + message : message, ...rest);
  }
  return prefixed as LoggerService;
}
