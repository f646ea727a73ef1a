import type { LoggerService } from '@nestjs/common';
import { PlatformAuthError } from '../platform-auth.errors.js';
import { errorName } from '../credentials/signature.check.js';
import type { PlatformAuthSettings } from '../options/options.resolver.js';
import type { TokenProvider } from './token.provider.js';

/**
 * With `startupCheck`, the first token is acquired while the application boots, so a wrong machineId or an
 * unreachable platform shows at deploy time: `'fail'` rejects `app.init()`/`listen()` with the error, `'warn'` (the
 * default) logs it and lets the application start; the token it got is the one the first call uses.
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
    if (mode === 'fail') throw error;
    // Whatever failed (the exchange, a key, the store), 'warn' promises a start: a warning that crashed the boot
    // would be 'fail' by another name.
    logger.warn(`Start-up check: no token could be acquired; the application starts anyway. ${described(error)}`);
  }
}

/**
 * Our errors' messages are built to be logged (hint included); another error is named only, since its message is not
 * ours and may quote what it was given.
 */
function described(error: unknown): string {
  return error instanceof PlatformAuthError
    ? `${error.name}: ${error.message}`
    : `${errorName(error)} (message not logged)`;
}
