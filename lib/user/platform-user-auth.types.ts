/** What user sign-in's service takes and returns. */

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
  /** The ID token (OpenID Connect), kept for logout's `id_token_hint`. */
  idToken?: string;
}

export interface LogoutOptions {
  /**
   * Where the authorization server sends the browser after its logout (`post_logout_redirect_uri`); it must be
   * registered with the client there.
   */
  postLogoutRedirectUri?: string;
}

export interface LogoutResult {
  /**
   * Send the browser here (302 or 303) to end the user's session at the authorization server too (OpenID Connect
   * RP-Initiated Logout), when it has an end-session endpoint. Carries `id_token_hint` when the session has an ID
   * token, and the post-logout redirect.
   */
  endSessionUrl?: string;
  /** Whether the refresh token was revoked at the server (RFC 7009); false without a revocation endpoint or token. */
  refreshTokenRevoked: boolean;
}
