import * as oauth from 'oauth4webapi';
import { sanitizeRemoteText } from '../util/remote-text.util.js';
import { oauthErrorCode, UserAuthError } from './user-auth.errors.js';
import { ResponseTooLargeError } from './user-http.util.js';

/** What `invalid_client` (RFC 6749 §5.2) most often means here. */
const INVALID_CLIENT_HINT =
  'the client is unknown or its authentication was refused: check clientId, clientAuthentication and its clientSecret or private_key_jwt key';

/**
 * The failure of a token endpoint call as a `UserAuthError`. oauth4webapi keeps the response body and the request's
 * parameters in `cause`; only its fixed messages and the sanitised OAuth error fields are carried over, never the
 * cause, so codes, verifiers and tokens stay out.
 */
export function tokenEndpointFailure(error: unknown, action: string, secrets: readonly string[]): UserAuthError {
  if (error instanceof oauth.ResponseBodyError) {
    const oauthError = oauthErrorCode(error.error);
    const oauthErrorDescription = sanitizeRemoteText(error.error_description, secrets);
    const reason = error.error === 'invalid_grant' ? 'invalid_grant' : 'token_error';
    const why =
      reason === 'invalid_grant'
        ? ' (an authorization code used twice or expired, a wrong code_verifier or redirect_uri, or a refresh token no longer valid)'
        : error.error === 'invalid_client'
          ? ` (${INVALID_CLIENT_HINT})`
          : '';
    return new UserAuthError(
      `${action}: the token endpoint answered ${error.status} ${oauthError}${why}${oauthErrorDescription ? `: ${oauthErrorDescription}` : ''}`,
      { reason, status: error.status, oauthError, oauthErrorDescription },
    );
  }
  if (error instanceof oauth.WWWAuthenticateChallengeError) {
    const oauthError = oauthErrorCode(error.cause[0]?.parameters.error);
    return new UserAuthError(
      `${action}: the token endpoint answered ${error.status} with a WWW-Authenticate challenge${oauthError ? ` (${oauthError})` : ''}; ${INVALID_CLIENT_HINT}`,
      { reason: 'token_error', status: error.status, oauthError },
    );
  }
  if (error instanceof ResponseTooLargeError) {
    return new UserAuthError(
      `${action}: the token endpoint's answer is larger than ${error.limitBytes / 1024} KiB; it was not read further`,
      {
        reason: 'invalid_response',
      },
    );
  }
  if (error instanceof oauth.OperationProcessingError || error instanceof oauth.UnsupportedOperationError) {
    const status = error.cause instanceof Response ? error.cause.status : undefined;
    return new UserAuthError(`${action}: the token endpoint's answer is not valid: ${error.message}`, {
      reason: 'invalid_response',
      status,
    });
  }
  if (error instanceof DOMException && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return new UserAuthError(`${action}: the token endpoint did not answer in time`, { reason: 'timeout' });
  }
  const networkCode = (error as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  return new UserAuthError(
    `${action}: the token endpoint could not be reached${typeof networkCode === 'string' ? ` (${networkCode})` : ''}`,
    { reason: 'network_error' },
  );
}
