import { TokenExchangeError, type TokenExchangeErrorDetails } from '../platform-auth.errors.js';

/**
 * The error of a caller held back for `waitMs` after `cause` failed, here or (`shared`) on another replica that
 * shared it through the token store. It keeps the cause's fields, `transient` among them: a refusal is still a
 * refusal to the callers held back after it.
 */
export function backoffError(
  cause: Omit<TokenExchangeErrorDetails, 'reason'>,
  waitMs: number,
  shared = false,
): TokenExchangeError {
  const where = shared ? 'on another replica' : 'recently';
  const who = shared ? 'Shared by the token store: the fleet fails' : 'Failing';
  return new TokenExchangeError(`token exchange failed ${where}; next attempt in ${Math.ceil(waitMs)} ms`, {
    ...cause,
    reason: 'backoff',
    retryAfterSeconds: Math.ceil(waitMs / 1000),
    hint: `${cause.hint} (${who} fast until the back-off ends, so the token endpoint is not hammered.)`,
  });
}
