import * as oauth from 'oauth4webapi';
import type { Clock } from '../platform-auth.clock.js';
import { sanitizeRemoteText } from '../util/remote-text.util.js';
import { DEFAULT_USER_TOKEN_LIFETIME_SECONDS } from './platform-user-auth.constants.js';
import { oauthErrorCode, UserAuthError } from './user-auth.errors.js';
import { seal, stringClaim, unseal } from './user-auth.seal.js';
import { tokenEndpointFailure } from './user-token.errors.js';
import type { ResolvedUserAuthConfig } from './user-options.resolver.js';
import { PlatformUserTelemetry } from '../telemetry/user-telemetry.js';

export interface AuthorizationRequestOptions {
  /** Scopes for this sign-in instead of the configured ones. */
  scope?: string;
  /** Further authorization request parameters (`prompt`, `login_hint`, …); the protocol's own cannot be replaced. */
  parameters?: Readonly<Record<string, string>>;
}

export interface AuthorizationRequest {
  /** Send the browser here (302). */
  url: string;
  /** Opaque, encrypted and authenticated; keep it in an HttpOnly, Secure, SameSite=Lax cookie until the callback. */
  transaction: string;
  /** When the transaction stops being accepted. */
  expiresAt: Date;
}

/** The signed-in user's tokens. Secrets: keep them server-side or in the encrypted session, never in logs. */
export interface UserTokens {
  accessToken: string;
  tokenType: 'Bearer';
  expiresAt: Date;
  refreshToken?: string;
  /** The scopes granted, when the platform says. */
  scope?: string;
}

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
/** Builds the service over a resolved configuration; only the module calls it. */
export let createPlatformUserAuth: (config: ResolvedUserAuthConfig, clock: Clock) => PlatformUserAuth;

export class PlatformUserAuth {
  private readonly server: oauth.AuthorizationServer;
  private readonly client: oauth.Client;
  private readonly insecure: boolean;
  private readonly telemetry: PlatformUserTelemetry;

  static {
    createPlatformUserAuth = (config, clock) => new PlatformUserAuth(config, clock);
  }

  private constructor(
    private readonly config: ResolvedUserAuthConfig,
    private readonly clock: Clock,
  ) {
    this.server = {
      issuer: config.issuer,
      authorization_endpoint: config.authorizationEndpoint,
      token_endpoint: config.tokenEndpoint,
    };
    this.client = { client_id: config.clientId };
    // Start-up validation allows http: only on loopback.
    this.insecure = config.tokenEndpoint.startsWith('http:');
    this.telemetry = new PlatformUserTelemetry(config.tokenEndpoint, clock);
  }

  /** The authorize URL for a new sign-in, and the transaction the callback will need. */
  async createAuthorizationRequest(options: AuthorizationRequestOptions = {}): Promise<AuthorizationRequest> {
    const state = oauth.generateRandomState();
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const nonce = oauth.generateRandomNonce();
    const scope = options.scope ?? this.config.scope;
    const url = new URL(this.config.authorizationEndpoint);
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
    const parameters = this.validateCallback(callbackUrl, tx);
    return this.telemetry.record('authorization_code', () => this.exchangeCode(parameters, tx));
  }

  private async exchangeCode(parameters: URLSearchParams, tx: Transaction): Promise<UserTokens> {
    let response: Response;
    try {
      response = await oauth.authorizationCodeGrantRequest(
        this.server,
        this.client,
        oauth.None(),
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
        oauth.None(),
        refreshToken,
        this.requestOptions(),
      );
      const result = await oauth.processRefreshTokenResponse(this.server, this.client, response);
      return this.tokensOf(result, refreshToken);
    } catch (error) {
      if (error instanceof UserAuthError) throw error;
      throw tokenEndpointFailure(error, 'Refresh failed', [refreshToken]);
    }
  }

  private validateCallback(callbackUrl: string | URL, tx: Transaction): URLSearchParams {
    let url: URL;
    try {
      url = new URL(callbackUrl, this.config.redirectUri);
    } catch {
      throw new UserAuthError('Sign-in failed: the callback URL cannot be parsed', { reason: 'invalid_callback' });
    }
    let parameters: URLSearchParams;
    try {
      parameters = oauth.validateAuthResponse(this.server, this.client, url.searchParams, tx.state);
    } catch (error) {
      if (error instanceof oauth.AuthorizationResponseError) {
        const oauthError = oauthErrorCode(error.error);
        const oauthErrorDescription = sanitizeRemoteText(error.error_description);
        const denied = error.error === 'access_denied';
        throw new UserAuthError(
          denied
            ? 'Sign-in was declined on the platform (access_denied)'
            : `Sign-in failed: the platform answered ${oauthError}${oauthErrorDescription ? `: ${oauthErrorDescription}` : ''}`,
          { reason: denied ? 'access_denied' : 'authorization_error', oauthError, oauthErrorDescription },
        );
      }
      const states = url.searchParams.getAll('state');
      if (states.length !== 1 || states[0] !== tx.state) {
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

  private requestOptions(): oauth.TokenEndpointRequestOptions {
    return {
      signal: AbortSignal.timeout(this.config.requestTimeoutMs),
      [oauth.allowInsecureRequests]: this.insecure,
    };
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
