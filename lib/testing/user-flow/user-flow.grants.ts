import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { parseMediaType, type EmulatorRequest, type EmulatorResponse } from '../emulator/emulator.http.js';
import { quote, tokenRejection, type TokenRejection } from '../emulator/emulator.assertion-verifier.js';
import { ExpiringMap } from '../emulator/emulator.expiring-map.js';
import type { UserDirectory } from './user-flow.clients.js';
import type { UserFlowRecord } from './user-flow.types.js';

/** The revocation endpoint (RFC 7009). An assumption like the token path: the platform publishes none. */
export const REVOCATION_PATH = '/loginservice/connect/revocation';
/** RFC 6749 §4.1.2: codes are short-lived; this emulator gives them a minute. */
const AUTHORIZATION_CODE_LIFETIME_MS = 60_000;
const REFRESH_TOKEN_LIFETIME_MS = 8 * 60 * 60 * 1000;
const USER_GRANTS = new Set(['authorization_code', 'refresh_token']);
/** RFC 7636 §4.1. */
const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

interface CodeBinding {
  readonly clientId: string;
  readonly redirectUri: string;
  /** S256 `code_challenge`. */
  readonly challenge: string;
  readonly userId: string;
  readonly scope?: string;
}

interface IssuedCode extends CodeBinding {
  readonly expiresAt: number;
  used: boolean;
  /** Revoked if the code is presented again (RFC 6749 §4.1.2). */
  readonly issued: string[];
}

interface IssuedUserToken {
  readonly userId: string;
  readonly clientId: string;
  readonly scope?: string;
  readonly expiresAt: number;
  /** Tokens of one sign-in share a family; a replayed refresh token revokes the family (RFC 9700 §4.14.2). */
  readonly family: string;
  revoked: boolean;
}

type UserGrantOutcome =
  { readonly ok: true; readonly body: Record<string, unknown>; readonly userId: string } | TokenRejection;

type UserTokenCheck =
  | { readonly ok: true; readonly userId: string; readonly clientId: string; readonly scope?: string }
  | { readonly ok: false; readonly reason: string };

interface UserGrantSettings {
  readonly now: () => number;
  readonly directory: UserDirectory;
  readonly tokenLifetimeSeconds: () => number;
  readonly invalidClientStatus: number;
  readonly record: (entry: Omit<UserFlowRecord, 'at'>) => void;
}

/** The token endpoint's user grants: one-time codes bound to client, redirect URI and challenge; rotating refresh. */
export class UserGrants {
  private readonly codes: ExpiringMap<IssuedCode>;
  private readonly accessTokens: ExpiringMap<IssuedUserToken>;
  private readonly refreshTokens: ExpiringMap<IssuedUserToken>;

  constructor(private readonly settings: UserGrantSettings) {
    this.codes = new ExpiringMap(settings.now);
    this.accessTokens = new ExpiringMap(settings.now);
    this.refreshTokens = new ExpiringMap(settings.now);
  }

  handles(grantType: string | undefined): boolean {
    return grantType !== undefined && USER_GRANTS.has(grantType);
  }

  issueCode(binding: CodeBinding): string {
    const code = randomBytes(32).toString('base64url');
    this.codes.set(code, {
      ...binding,
      expiresAt: this.settings.now() + AUTHORIZATION_CODE_LIFETIME_MS,
      used: false,
      issued: [],
    });
    return code;
  }

  answer(form: URLSearchParams): UserGrantOutcome {
    const grantType = form.get('grant_type') ?? undefined;
    const clientId = form.get('client_id') ?? undefined;
    const outcome = this.decide(form, grantType);
    this.settings.record({
      step: 'token',
      verdict: outcome.ok ? 'accepted' : 'rejected',
      status: outcome.ok ? 200 : outcome.error === 'invalid_client' ? this.settings.invalidClientStatus : 400,
      grantType,
      clientId,
      userId: outcome.ok ? outcome.userId : undefined,
      error: outcome.ok ? undefined : outcome.error,
      errorDescription: outcome.ok ? undefined : outcome.description,
    });
    return outcome;
  }

  checkAccessToken(accessToken: string): UserTokenCheck {
    const token = this.accessTokens.get(accessToken);
    if (!token) return { ok: false, reason: 'not a user access token of this platform' };
    if (token.revoked) return { ok: false, reason: 'the access token has been revoked' };
    if (token.expiresAt <= this.settings.now()) return { ok: false, reason: 'the access token has expired' };
    return { ok: true, userId: token.userId, clientId: token.clientId, scope: token.scope };
  }

  private decide(form: URLSearchParams, grantType: string | undefined): UserGrantOutcome {
    const names = grantType === 'authorization_code' ? ['code', 'redirect_uri', 'code_verifier'] : ['refresh_token'];
    const repeated = [...names, 'scope'].filter((name) => form.getAll(name).length > 1);
    if (repeated.length > 0)
      return tokenRejection('duplicate-parameter', 'invalid_request', `${repeated.join(', ')} appear more than once`);
    const clientId = form.get('client_id');
    if (!clientId)
      return tokenRejection('client_id', 'invalid_request', 'client_id is missing (a public client must send it)');
    if (!this.settings.directory.client(clientId))
      return tokenRejection(
        'client_id',
        'invalid_client',
        `client_id ${quote(clientId)} is not a registered user client`,
      );
    return grantType === 'authorization_code' ? this.redeemCode(form, clientId) : this.refresh(form, clientId);
  }

  /** RFC 6749 §4.1.3 and RFC 7636 §4.6. */
  private redeemCode(form: URLSearchParams, clientId: string): UserGrantOutcome {
    const codeValue = form.get('code');
    const redirectUri = form.get('redirect_uri');
    const verifier = form.get('code_verifier');
    if (!codeValue) return tokenRejection('code', 'invalid_request', 'code is missing');
    if (!redirectUri) return tokenRejection('redirect_uri', 'invalid_request', 'redirect_uri is missing');
    if (!verifier) return tokenRejection('code_verifier', 'invalid_request', 'code_verifier is missing (PKCE)');
    const code = this.codes.get(codeValue);
    if (!code) return tokenRejection('code', 'invalid_grant', 'the authorization code is unknown');
    if (code.used) {
      for (const token of code.issued) this.revoke(token);
      return tokenRejection('code', 'invalid_grant', 'the authorization code was already used; its tokens are revoked');
    }
    code.used = true;
    if (code.expiresAt <= this.settings.now())
      return tokenRejection('code', 'invalid_grant', 'the authorization code has expired (codes live 60 seconds)');
    if (code.clientId !== clientId)
      return tokenRejection('code', 'invalid_grant', 'the authorization code was issued to another client');
    if (code.redirectUri !== redirectUri)
      return tokenRejection('redirect_uri', 'invalid_grant', 'redirect_uri differs from the authorization request');
    if (!CODE_VERIFIER.test(verifier))
      return tokenRejection(
        'code_verifier',
        'invalid_request',
        'code_verifier must be 43 to 128 unreserved characters',
      );
    if (!matchesS256(verifier, code.challenge))
      return tokenRejection('code_verifier', 'invalid_grant', 'code_verifier does not match the code_challenge (S256)');
    const body = this.issueTokens(code, randomUUID());
    code.issued.push(body.access_token as string, body.refresh_token as string);
    return { ok: true, body, userId: code.userId };
  }

  /** RFC 6749 §6, with rotation and reuse detection for public clients (RFC 9700 §4.14.2). */
  private refresh(form: URLSearchParams, clientId: string): UserGrantOutcome {
    const value = form.get('refresh_token');
    if (!value) return tokenRejection('refresh_token', 'invalid_request', 'refresh_token is missing');
    const token = this.refreshTokens.get(value);
    if (!token) return tokenRejection('refresh_token', 'invalid_grant', 'the refresh token is unknown');
    if (token.revoked) {
      this.revokeFamily(token.family);
      return tokenRejection(
        'refresh_token',
        'invalid_grant',
        'the refresh token was already used; the sign-in is revoked',
      );
    }
    if (token.expiresAt <= this.settings.now())
      return tokenRejection('refresh_token', 'invalid_grant', 'the refresh token has expired');
    if (token.clientId !== clientId)
      return tokenRejection('refresh_token', 'invalid_grant', 'the refresh token was issued to another client');
    token.revoked = true;
    return { ok: true, body: this.issueTokens(token, token.family), userId: token.userId };
  }

  private issueTokens(
    grant: { readonly userId: string; readonly clientId: string; readonly scope?: string },
    family: string,
  ): Record<string, unknown> {
    const now = this.settings.now();
    const expiresIn = this.settings.tokenLifetimeSeconds();
    const base = { userId: grant.userId, clientId: grant.clientId, scope: grant.scope, family, revoked: false };
    const accessToken = randomBytes(32).toString('base64url');
    const refreshToken = randomBytes(32).toString('base64url');
    this.accessTokens.set(accessToken, { ...base, expiresAt: now + expiresIn * 1000 });
    this.refreshTokens.set(refreshToken, { ...base, expiresAt: now + REFRESH_TOKEN_LIFETIME_MS });
    return {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: expiresIn,
      refresh_token: refreshToken,
      ...(grant.scope ? { scope: grant.scope } : {}),
    };
  }

  /**
   * `POST /loginservice/connect/revocation` (RFC 7009 §2): a user client revokes a refresh or access token, which
   * ends every token of its sign-in. 200 for a token that is unknown or another client's too (§2.2), as the RFC asks.
   */
  async revocation(req: EmulatorRequest): Promise<EmulatorResponse> {
    const bodyRead = await req.readBody();
    const answer = (status: number, body: object, clientId?: string, error?: string): EmulatorResponse => {
      this.settings.record({
        step: 'revocation',
        verdict: status === 200 ? 'accepted' : 'rejected',
        status,
        clientId,
        error,
      });
      return { status, body, closeConnection: bodyRead.tooLarge, headers: { 'cache-control': 'no-store' } };
    };
    if (req.method !== 'POST') return answer(405, { error: 'invalid_request', error_description: 'POST only' });
    if (bodyRead.tooLarge || parseMediaType(req.headers['content-type'])?.type !== 'application/x-www-form-urlencoded')
      return answer(
        400,
        { error: 'invalid_request', error_description: 'send a small form' },
        undefined,
        'invalid_request',
      );
    const form = new URLSearchParams(bodyRead.body.toString('utf8'));
    const clientId = form.get('client_id') ?? undefined;
    if (!clientId || !this.settings.directory.client(clientId))
      return answer(
        this.settings.invalidClientStatus,
        { error: 'invalid_client', error_description: 'client_id is missing or not a registered user client' },
        clientId,
        'invalid_client',
      );
    const token = form.get('token');
    if (!token)
      return answer(
        400,
        { error: 'invalid_request', error_description: 'token is missing' },
        clientId,
        'invalid_request',
      );
    const issued = this.accessTokens.get(token) ?? this.refreshTokens.get(token);
    if (issued && issued.clientId === clientId) this.revokeFamily(issued.family);
    return answer(200, {}, clientId);
  }

  private revoke(token: string): void {
    const issued = this.accessTokens.get(token) ?? this.refreshTokens.get(token);
    if (issued) this.revokeFamily(issued.family);
  }

  private revokeFamily(family: string): void {
    for (const store of [this.accessTokens, this.refreshTokens])
      for (const token of store.values()) if (token.family === family) token.revoked = true;
  }
}

/** RFC 7636 §4.6: BASE64URL(SHA256(ASCII(code_verifier))) == code_challenge. */
export function matchesS256(verifier: string, challenge: string): boolean {
  const computed = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}
