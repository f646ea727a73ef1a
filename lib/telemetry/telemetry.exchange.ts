import type { TokenExchangeFailure } from '../platform-auth.errors.js';

export interface ExchangeResult {
  readonly ok: boolean;
  /** `signing_failed`: no request was made, the assertion could not be signed. */
  readonly reason?: TokenExchangeFailure | 'signing_failed';
  readonly status?: number;
  readonly attempts: number;
  /** For a success: the token's lifetime, from the platform's `expires_in`. */
  readonly lifetimeSeconds?: number;
}

/** The renewal failed (its `TokenExchangeError` reason), or the re-sent request did (its HTTP status). */
export function reauthenticationErrorType(error: unknown, status: unknown): string {
  const reason = (error as { reason?: unknown }).reason;
  if (typeof reason === 'string') return reason;
  if (typeof status === 'number') return String(status);
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^[A-Z_]{2,40}$/.test(code) ? code : '_OTHER';
}

/** One exchange in one line, for `debug`: never the token, the assertion or the machineId. */
export function describeExchange(result: ExchangeResult, durationSeconds: number): string {
  const took = `${result.attempts} attempt${result.attempts === 1 ? '' : 's'}, ${durationSeconds.toFixed(3)} s`;
  if (result.ok) {
    return result.attempts === 0
      ? `Token taken from the shared token store (valid for ${result.lifetimeSeconds} s)`
      : `Token exchange succeeded (${took}); the token is valid for ${result.lifetimeSeconds} s`;
  }
  const status = result.status === undefined ? '' : `, HTTP ${result.status}`;
  return `Token exchange failed: ${result.reason}${status} (${took})`;
}
