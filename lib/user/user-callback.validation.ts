import * as oauth from 'oauth4webapi';
import { sanitizeRemoteText } from '../util/remote-text.util.js';
import { oauthErrorCode, UserAuthError } from './user-auth.errors.js';

/** What the callback of one sign-in must match: where it was sent back to, by which server, for which client. */
interface ExpectedCallback {
  readonly redirectUri: string;
  readonly server: oauth.AuthorizationServer;
  readonly client: oauth.Client;
  /** The state this sign-in sent. */
  readonly state: string;
}

/** An `access_denied` description that says a person declined (the emulator's, oidc-provider's, Keycloak's, …). */
const USER_DECLINED = /\b(declin|abort|cancel|reject|denied by (the )?(end-)?user)/i;
const SERVER_REFUSED_HINT =
  'No user declined: the authorization server refused the request itself. Likely causes: a scope the client may not ask for (an OpenID Provider needs at least openid), or a client not allowed this flow, grant or redirect URI; check scope and the client registration';

/**
 * The authorization response's parameters (RFC 6749 §4.1.2), checked by oauth4webapi against the state this sign-in
 * sent; every refusal is a `UserAuthError` that says whether a person declined, the server refused, or the callback
 * is forged or malformed.
 */
export function validateCallback(callbackUrl: string | URL, expected: ExpectedCallback): URLSearchParams {
  let url: URL;
  try {
    url = new URL(callbackUrl, expected.redirectUri);
  } catch {
    throw new UserAuthError('Sign-in failed: the callback URL cannot be parsed', { reason: 'invalid_callback' });
  }
  let parameters: URLSearchParams;
  try {
    parameters = oauth.validateAuthResponse(expected.server, expected.client, url.searchParams, expected.state);
  } catch (error) {
    if (error instanceof oauth.AuthorizationResponseError) {
      const oauthError = oauthErrorCode(error.error);
      const oauthErrorDescription = sanitizeRemoteText(error.error_description);
      const described = oauthErrorDescription ? `: ${oauthErrorDescription}` : '';
      if (error.error === 'access_denied' && USER_DECLINED.test(oauthErrorDescription ?? ''))
        throw new UserAuthError(`Sign-in was declined on the platform (access_denied${described})`, {
          reason: 'access_denied',
          oauthError,
          oauthErrorDescription,
        });
      if (error.error === 'access_denied' || error.error === 'invalid_scope' || error.error === 'unauthorized_client')
        throw new UserAuthError(
          `Sign-in failed: the authorization server refused the request (${oauthError}${described})`,
          {
            reason: 'server_refused',
            oauthError,
            oauthErrorDescription,
            hint: SERVER_REFUSED_HINT,
          },
        );
      throw new UserAuthError(`Sign-in failed: the platform answered ${oauthError}${described}`, {
        reason: 'authorization_error',
        oauthError,
        oauthErrorDescription,
      });
    }
    const states = url.searchParams.getAll('state');
    if (states.length !== 1 || states[0] !== expected.state) {
      throw new UserAuthError(
        'Sign-in failed: the callback does not carry the state this sign-in sent (a forged or crossed callback, or a second sign-in in another tab); start again',
        { reason: 'state_mismatch' },
      );
    }
    const detail = error instanceof Error ? error.message : 'unrecognised';
    throw new UserAuthError(`Sign-in failed: the callback is not a valid authorization response: ${detail}`, {
      reason: 'invalid_callback',
    });
  }
  if (!parameters.get('code'))
    throw new UserAuthError('Sign-in failed: the callback carries neither a code nor an error', {
      reason: 'invalid_callback',
    });
  return parameters;
}
