import type { LoggerService } from '@nestjs/common';
import { TokenExchangeError } from '../platform-auth.errors.js';
import type { PlatformAuthSettings } from '../options/options.resolver.js';
import type { TokenProvider } from './token.provider.js';

/**
 * With `startupCheck`, the first token is acquired while the application boots, so a wrong machineId or an
 * unreachable platform shows at deploy time: `'fail'` rejects `app.init()`/`listen()` with the
 * `TokenExchangeError`, `'warn'` logs it and lets the application start.
 */
export async function runStartupCheck(
  mode: PlatformAuthSettings['startupCheck'],
  tokens: Pick<TokenProvider, 'getAccessToken'>,
  logger: LoggerService,
): Promise<void> {
  if (mode === 'off') return;
  try {
    await tokens.getAccessToken();
  } catch (error) {
    if (mode === 'fail' || !(error instanceof TokenExchangeError)) throw error;
    logger.warn(`Start-up check: no token could be acquired; the application starts anyway. ${error.message}`);
  }
}
