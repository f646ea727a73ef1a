/** A public client registered for user sign-in (Authorization Code + PKCE). */
export interface RegisterUserClientInput {
  clientId: string;
  /** Compared exactly (RFC 9700 §2.1): scheme, host, port, path and query. */
  redirectUris: string[];
  /** Shown on the sign-in page. Default: the client id. */
  name?: string;
}

export interface RegisteredUserClient {
  readonly clientId: string;
  readonly redirectUris: readonly string[];
  readonly name: string;
}

/** Someone who can sign in on the emulator's page. */
export interface TestUser {
  /** The `sub` of `/api/me`. */
  id: string;
  name: string;
  email: string;
}

export type UserFlowStep = 'authorize' | 'sign-in' | 'token' | 'revocation' | 'me';

/**
 * One step of a user sign-in as the emulator saw it. Never holds a code, verifier, challenge, state or token.
 * `verdict`: `accepted` (page served, code or token issued, `/api/me` answered), `denied` (the user declined),
 * `rejected` (the request broke a rule; `error` and `errorDescription` say which).
 */
export interface UserFlowRecord {
  /** Emulator time (ms). */
  at: number;
  step: UserFlowStep;
  verdict: 'accepted' | 'denied' | 'rejected';
  status: number;
  clientId?: string;
  userId?: string;
  grantType?: string;
  scope?: string;
  error?: string;
  errorDescription?: string;
}
