import * as oauth from 'oauth4webapi';
import type { Clock } from '../platform-auth.clock.js';
import { httpUrlProblem } from '../options/url.rules.js';
import { DEFAULT_USER_TOKEN_LIFETIME_SECONDS } from './platform-user-auth.constants.js';
import { oauthErrorCode, UserAuthError } from './user-auth.errors.js';
import { seal, stringClaim, unseal } from './user-auth.seal.js';
import { tokenEndpointFailure } from './user-token.errors.js';
import type { ResolvedUserAuthConfig } from './user-options.resolver.js';
import { PlatformUserTelemetry } from '../telemetry/user-telemetry.js';
import { clientAuthenticationFor } from './user-client-auth.js';
import { requestOptions } from './user-http.util.js';
import { validateCallback } from './user-callback.validation.js';
import type { EndedSessions } from './user-session.ended.js';
import type {
  AuthorizationRequest,
  AuthorizationRequestOptions,
  LogoutOptions,
  LogoutResult,
  UserTokens,
} from './platform-user-auth.types.js';

interface Transaction {
  readonly state: string;
  readonly codeVerifier: string;
  readonly nonce: string;
  readonly scope?: string;
}

/** Parameters this class sets itself; `options.parameters` may not replace them. */
const PROTOCOL_PARAMETERS = new Set([
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'nonce',
]);

/**
 * User sign-in with the Authorization Code flow and PKCE (RFC 6749 §4.1, RFC 7636 S256, RFC 9700), the protocol
 * work done by oauth4webapi. Stateless: everything the callback needs travels in the encrypted `transaction`, so
 * any replica that shares the state secret can finish a sign-in another one started.
 */
export class PlatformUserAuth {
  private readonly server: oauth.AuthorizationServer;
  private readonly client: oauth.Client;
  private readonly clientAuth: oauth.ClientAuth;
  private readonly telemetry: PlatformUserTelemetry;

  /** @internal Only the module builds it; apps get it from the container. */
  constructor(
    private readonly config: ResolvedUserAuthConfig,
    private readonly clock: Clock,
    private readonly ended: EndedSessions,
  ) {
    this.server = config.server;
    this.client = { client_id: config.clientId };
    this.clientAuth = clientAuthenticationFor(config, clock);
    this.telemetry = new PlatformUserTelemetry(config.server.token_endpoint, clock);
  }

  /** The authorize URL for a new sign-in, and the transaction the callback will need. */
  async createAuthorizationRequest(options: AuthorizationRequestOptions = {}): Promise<AuthorizationRequest> {
    const state = oauth.generateRandomState();
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const nonce = oauth.generateRandomNonce();
    const scope = options.scope ?? this.config.scope;
    const url = new URL(this.config.server.authorization_endpoint);
    for (const [name, value] of Object.entries(options.parameters ?? {})) {
      if (PROTOCOL_PARAMETERS.has(name))
        throw new TypeError(`createAuthorizationRequest: '${name}' is set by the library`);
      url.searchParams.set(name, value);
    }
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', this.config.clientId);
    url.searchParams.set('redirect_uri', this.config.redirectUri);
    if (scope) url.searchParams.set('scope', scope);
    url.searchParams.set('state', state);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier));
    url.searchParams.set('code_challenge_method', 'S256');
    // OpenID Connect's replay defence; a plain OAuth server has no use for it.
    if (isOpenId(scope)) url.searchParams.set('nonce', nonce);
    // OpenID Connect Core §11: without consent asked for, an OpenID Provider ignores offline_access (no refresh token).
    if (scope?.split(' ').includes('offline_access')) {
      const prompt = (url.searchParams.get('prompt') ?? '').split(' ').filter((value) => value !== '');
      if (!prompt.includes('consent'))
        url.searchParams.set('prompt', [...prompt.filter((v) => v !== 'none'), 'consent'].join(' '));
    }

    const now = this.clock.now();
    const expiresAt = now + this.config.transactionLifetimeSeconds * 1000;
    const claims = { st: state, cv: codeVerifier, n: nonce, ...(scope ? { sc: scope } : {}) };
    const transaction = await seal(claims, this.config.transactionKey, this.config.clientId, now, expiresAt);
    return { url: url.href, transaction, expiresAt: new Date(expiresAt) };
  }

  /**
   * Finishes a sign-in: checks the callback against the transaction (state, issuer, error responses), exchanges the
   * code with the verifier and validates the token response. `callbackUrl` is the URL the browser arrived at, or
   * just its path and query (`request.url`).
   */
  async completeAuthorization(callbackUrl: string | URL, transaction: string | undefined): Promise<UserTokens> {
    const opened = await unseal(transaction, this.config.transactionKey, this.config.clientId, this.clock.now(), (p) =>
      readTransaction(p),
    );
    if (!opened.ok) {
      throw opened.expired
        ? new UserAuthError('Sign-in took too long: the transaction has expired; start again at the login route', {
            reason: 'transaction_expired',
          })
        : new UserAuthError(
            'Sign-in cannot be completed: the transaction cookie is missing, altered or from another configuration; start again at the login route',
            { reason: 'transaction_invalid' },
          );
    }
    const tx = opened.value;
    const parameters = validateCallback(callbackUrl, {
      redirectUri: this.config.redirectUri,
      server: this.server,
      client: this.client,
      state: tx.state,
    });
    return this.telemetry.record('authorization_code', () => this.exchangeCode(parameters, tx));
  }

  private async exchangeCode(parameters: URLSearchParams, tx: Transaction): Promise<UserTokens> {
    let response: Response;
    try {
      response = await oauth.authorizationCodeGrantRequest(
        this.server,
        this.client,
        this.clientAuth,
        parameters,
        this.config.redirectUri,
        tx.codeVerifier,
        this.requestOptions(),
      );
    } catch (error) {
      throw tokenEndpointFailure(error, 'Sign-in failed', [tx.codeVerifier]);
    }
    const code = parameters.get('code') ?? undefined;
    try {
      const result = await oauth.processAuthorizationCodeResponse(
        this.server,
        this.client,
        response,
        isOpenId(tx.scope) ? { expectedNonce: tx.nonce, requireIdToken: true } : undefined,
      );
      // The ID token's claims were checked above; its signature needs the server's keys (discovery's jwks_uri).
      if (result.id_token && this.server.jwks_uri)
        await oauth.validateApplicationLevelSignature(this.server, response, this.requestOptions());
      return this.tokensOf(result);
    } catch (error) {
      if (error instanceof UserAuthError) throw error;
      throw tokenEndpointFailure(error, 'Sign-in failed', [tx.codeVerifier, code ?? '']);
    }
  }

  /** New tokens for a refresh token. Keeps the old refresh token when the platform does not rotate it (RFC 6749 §6). */
  async refresh(refreshToken: string): Promise<UserTokens> {
    if (typeof refreshToken !== 'string' || refreshToken === '')
      throw new UserAuthError('Refresh failed: no refresh token was given', { reason: 'invalid_grant' });
    return this.telemetry.record('refresh_token', () => this.refreshGrant(refreshToken));
  }

  private async refreshGrant(refreshToken: string): Promise<UserTokens> {
    try {
      const response = await oauth.refreshTokenGrantRequest(
        this.server,
        this.client,
        this.clientAuth,
        refreshToken,
        this.requestOptions(),
      );
      const result = await oauth.processRefreshTokenResponse(this.server, this.client, response);
      if (result.id_token && this.server.jwks_uri)
        await oauth.validateApplicationLevelSignature(this.server, response, this.requestOptions());
      return this.tokensOf(result, refreshToken);
    } catch (error) {
      if (error instanceof UserAuthError) throw error;
      throw tokenEndpointFailure(error, 'Refresh failed', [refreshToken]);
    }
  }

  /**
   * Ends a signed-in session: revokes its refresh token at the server when it has a revocation endpoint (RFC 7009),
   * so no copy of the session can renew it anywhere; refuses the session in this process from now on (when `tokens`
   * is a session read by `PlatformUserSessions.readSession`); and returns the end-session URL to send the browser to
   * when the server has one (OpenID Connect RP-Initiated Logout), with `id_token_hint` and the post-logout redirect.
   * Clear the session cookie as well (`PlatformUserSessions.clearSessionCookie()`). A revocation that fails is
   * reported as `refreshTokenRevoked: false`, never thrown: the user is logged out here either way.
   */
  async logout(tokens: UserTokens, options: LogoutOptions = {}): Promise<LogoutResult> {
    const { sessionId, sessionExpiresAt } = tokens as { sessionId?: unknown; sessionExpiresAt?: unknown };
    if (typeof sessionId === 'string' && sessionExpiresAt instanceof Date) this.ended.end(sessionId, sessionExpiresAt);
    let endSessionUrl: string | undefined;
    if (this.server.end_session_endpoint) {
      const url = new URL(this.server.end_session_endpoint);
      url.searchParams.set('client_id', this.config.clientId);
      if (tokens.idToken) url.searchParams.set('id_token_hint', tokens.idToken);
      if (options.postLogoutRedirectUri !== undefined) {
        const problem = httpUrlProblem(options.postLogoutRedirectUri);
        if (problem !== undefined) throw new TypeError(`logout: postLogoutRedirectUri ${problem}`);
        url.searchParams.set('post_logout_redirect_uri', options.postLogoutRedirectUri);
      }
      endSessionUrl = url.href;
    }
    let refreshTokenRevoked = false;
    if (this.server.revocation_endpoint && tokens.refreshToken) {
      try {
        const response = await oauth.revocationRequest(this.server, this.client, this.clientAuth, tokens.refreshToken, {
          ...this.requestOptions(),
          additionalParameters: { token_type_hint: 'refresh_token' },
        });
        await oauth.processRevocationResponse(response);
        refreshTokenRevoked = true;
      } catch {
        refreshTokenRevoked = false;
      }
    }
    return { ...(endSessionUrl ? { endSessionUrl } : {}), refreshTokenRevoked };
  }

  /** A timeout, answers bounded to 64 KiB, and plain http: only where start-up allowed it (loopback). */
  private requestOptions() {
    return requestOptions(this.config.requestTimeoutMs, this.config.server.token_endpoint.startsWith('http:'));
  }

  private tokensOf(result: oauth.TokenEndpointResponse, previousRefreshToken?: string): UserTokens {
    if (result.token_type !== 'bearer') {
      throw new UserAuthError(
        `The token endpoint issued a token of type '${oauthErrorCode(result.token_type)}'; only Bearer is supported`,
        { reason: 'invalid_response' },
      );
    }
    const lifetime = result.expires_in ?? DEFAULT_USER_TOKEN_LIFETIME_SECONDS;
    if (lifetime <= 0) {
      throw new UserAuthError('The token endpoint issued a token that has already expired (expires_in <= 0)', {
        reason: 'invalid_response',
      });
    }
    const tokens: UserTokens = {
      accessToken: result.access_token,
      tokenType: 'Bearer',
      expiresAt: new Date(this.clock.now() + lifetime * 1000),
    };
    const refreshToken = result.refresh_token ?? previousRefreshToken;
    if (refreshToken) tokens.refreshToken = refreshToken;
    if (result.scope !== undefined) tokens.scope = result.scope;
    if (result.id_token) tokens.idToken = result.id_token;
    return tokens;
  }
}

function isOpenId(scope: string | undefined): boolean {
  return scope?.split(' ').includes('openid') ?? false;
}

function readTransaction(payload: Record<string, unknown>): Transaction | undefined {
  const state = stringClaim(payload, 'st');
  const codeVerifier = stringClaim(payload, 'cv');
  const nonce = stringClaim(payload, 'n');
  if (!state || !codeVerifier || !nonce) return undefined;
  return { state, codeVerifier, nonce, scope: stringClaim(payload, 'sc') };
}
