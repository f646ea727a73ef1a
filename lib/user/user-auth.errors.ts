import { PlatformAuthError } from '../platform-auth.errors.js';

/** Why a sign-in or a refresh failed. Stable identifiers; the message says the same in words. */
export type UserAuthFailure =
  /** The callback's `state` is missing or not the one this transaction sent (forged or crossed sign-ins). */
  | 'state_mismatch'
  /** The transaction cookie is missing, not ours, or was altered. */
  | 'transaction_invalid'
  /** The sign-in took longer than the transaction's lifetime. */
  | 'transaction_expired'
  /** A user declined on the authorization server's page: `access_denied` whose description says so. */
  | 'access_denied'
  /**
   * The authorization server refused the request itself, no user having declined: `invalid_scope`,
   * `unauthorized_client`, or an `access_denied` that does not say a user declined. `hint` names the likely causes.
   */
  | 'server_refused'
  /** Another error response at the callback (`server_error`, `invalid_request`, …; see `oauthError`). */
  | 'authorization_error'
  /** The callback is not an authorization response: no code, repeated parameters, a foreign `iss`, … */
  | 'invalid_callback'
  /** The token endpoint refused the code or refresh token: replayed, expired, wrong verifier or redirect URI. */
  | 'invalid_grant'
  /** The token endpoint answered another OAuth error (`invalid_client`, `invalid_request`, …). */
  | 'token_error'
  /** The token endpoint's answer is not a valid token response (status, content type, fields, token type). */
  | 'invalid_response'
  | 'network_error'
  | 'timeout';

export interface UserAuthErrorDetails {
  readonly reason: UserAuthFailure;
  /** HTTP status of the token endpoint's answer, when there was one. */
  readonly status?: number;
  /** The OAuth `error` code the platform sent (authorization or token response). */
  readonly oauthError?: string;
  /** The platform's `error_description`, cut to 200 characters, control characters and any secret removed. */
  readonly oauthErrorDescription?: string;
  /** The likely causes and what to check, when the library can tell (a refusal by the server, say). */
  readonly hint?: string;
}

/**
 * User sign-in or refresh failed. Built only from our own words and non-secret values: authorization codes,
 * verifiers, state, tokens and transactions never reach its message or fields.
 */
export class UserAuthError extends PlatformAuthError implements UserAuthErrorDetails {
  readonly code = 'PLATFORM_AUTH_USER';
  declare readonly reason: UserAuthFailure;
  declare readonly status?: number;
  declare readonly oauthError?: string;
  declare readonly oauthErrorDescription?: string;
  declare readonly hint?: string;

  constructor(message: string, details: UserAuthErrorDetails) {
    super(details.hint ? `${message}. ${details.hint}` : message);
    const { reason, status, oauthError, oauthErrorDescription, hint } = details;
    Object.assign(this, { reason, status, oauthError, oauthErrorDescription, hint });
  }
}

/** Whether `error` is a failed sign-in or refresh (with `reason`). */
export function isUserAuthError(error: unknown): error is UserAuthError {
  return error instanceof UserAuthError;
}

/** An OAuth `error` code as sent, when it has the character set RFC 6749 §5.2 allows; otherwise a stand-in. */
export function oauthErrorCode(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  return /^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,64}$/.test(value) ? value : 'unrecognised';
}
