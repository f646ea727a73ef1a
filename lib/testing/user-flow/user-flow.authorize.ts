import { randomBytes } from 'node:crypto';
import { ExpiringMap } from '../emulator/emulator.expiring-map.js';
import { parseMediaType, type EmulatorRequest, type EmulatorResponse } from '../emulator/emulator.http.js';
import type { UserDirectory } from './user-flow.clients.js';
import type { UserGrants } from './user-flow.grants.js';
import { errorPage, signInPage } from './user-flow.page.js';
import type { UserFlowRecord } from './user-flow.types.js';

/** How long the sign-in page may stay open before its decision is refused. */
const PENDING_LIFETIME_MS = 10 * 60_000;
/** Sign-in pages open at once, by default. */
const DEFAULT_MAX_PENDING_SIGN_INS = 10_000;
/** An S256 challenge is the base64url of 32 bytes: exactly 43 characters (RFC 7636 §4.2). */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** RFC 6749 §3.3. */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;
const SINGLE_VALUED = ['response_type', 'scope', 'state', 'code_challenge', 'code_challenge_method', 'nonce'];
const REDIRECT_HEADERS = { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' } as const;

interface PendingRequest {
  readonly clientId: string;
  readonly redirectUri: string;
  readonly challenge: string;
  readonly scope?: string;
  readonly state?: string;
  readonly expiresAt: number;
}

interface AuthorizeSettings {
  readonly now: () => number;
  /** The `iss` of authorization responses (RFC 9207): the emulator's URL. */
  readonly issuer: string;
  readonly directory: UserDirectory;
  readonly grants: UserGrants;
  readonly record: (entry: Omit<UserFlowRecord, 'at'>) => void;
  /** Sign-in pages open at once; past it the oldest is forgotten. */
  readonly maxPending?: number;
}

/**
 * `GET /loginservice/connect/authorize` (RFC 6749 §4.1.1, RFC 7636 §4.3) and the sign-in page's decision. Requests
 * whose client or redirect URI cannot be trusted, and those without an S256 challenge, get an error page; other
 * errors go back to the registered redirect URI with `state` and `iss`.
 */
export class AuthorizeEndpoint {
  private readonly pending: ExpiringMap<PendingRequest>;

  constructor(private readonly settings: AuthorizeSettings) {
    this.pending = new ExpiringMap(settings.now);
  }

  authorize(req: EmulatorRequest): EmulatorResponse {
    const query = new URL(req.url, 'http://emulator').searchParams;
    const clientId = single(query, 'client_id');
    const refuse = (error: string, description: string, status = 400): EmulatorResponse => {
      this.settings.record({
        step: 'authorize',
        verdict: 'rejected',
        status,
        clientId: clientId ?? undefined,
        error,
        errorDescription: description,
      });
      return errorPage(status, error, description);
    };
    if (req.method !== 'GET') {
      const response = refuse(
        'invalid_request',
        `method ${req.method} is not allowed; the authorize endpoint takes GET`,
        405,
      );
      return { ...response, headers: { ...response.headers, allow: 'GET' } };
    }
    if (clientId === null) return refuse('invalid_request', 'client_id is missing or repeated');
    const client = this.settings.directory.client(clientId);
    if (!client) return refuse('invalid_client', `client_id '${clientId}' is not a registered user client`);
    const redirectUri = single(query, 'redirect_uri');
    if (redirectUri === null) return refuse('invalid_request', 'redirect_uri is missing or repeated');
    if (!client.redirectUris.includes(redirectUri))
      return refuse(
        'invalid_request',
        `redirect_uri '${redirectUri}' is not registered for client '${clientId}' (exact match)`,
      );

    const state = query.get('state') ?? undefined;
    const back = (error: string, description: string): EmulatorResponse => {
      this.settings.record({
        step: 'authorize',
        verdict: 'rejected',
        status: 302,
        clientId,
        error,
        errorDescription: description,
      });
      return this.redirect(redirectUri, { error, error_description: description }, state, 302);
    };
    const challenge = single(query, 'code_challenge');
    if (!challenge) return refuse('invalid_request', 'code_challenge is missing or repeated: PKCE is required');
    if (query.get('code_challenge_method') !== 'S256')
      return refuse('invalid_request', 'code_challenge_method must be S256 (plain is not accepted)');
    if (!S256_CHALLENGE.test(challenge))
      return refuse('invalid_request', 'code_challenge is not an S256 challenge (43 base64url characters)');
    const repeated = SINGLE_VALUED.filter((name) => query.getAll(name).length > 1);
    if (repeated.length > 0) return back('invalid_request', `${repeated.join(', ')} appear more than once`);
    if (query.get('response_type') !== 'code') return back('unsupported_response_type', 'response_type must be code');
    const scope = query.get('scope') ?? undefined;
    if (scope !== undefined && !SCOPE.test(scope)) return back('invalid_scope', 'scope is malformed');
    if (scope?.split(' ').includes('openid'))
      return back('invalid_scope', 'the emulator does not issue ID tokens (openid)');

    const requestId = randomBytes(24).toString('base64url');
    const expiresAt = this.settings.now() + PENDING_LIFETIME_MS;
    this.pending.set(requestId, { clientId, redirectUri, challenge, scope, state, expiresAt });
    // Bounded: requests nobody finishes (a crawler, a flood) push out the oldest instead of growing memory.
    this.pending.trimTo(this.settings.maxPending ?? DEFAULT_MAX_PENDING_SIGN_INS);
    this.settings.record({ step: 'authorize', verdict: 'accepted', status: 200, clientId, scope });
    return signInPage(client, redirectUri, this.settings.directory.allUsers, requestId, scope);
  }

  /** `POST` of the sign-in page: approve as a user (a one-time code) or deny (`access_denied`). */
  async decide(req: EmulatorRequest): Promise<EmulatorResponse> {
    const bodyRead = await req.readBody();
    const refuse = (description: string, status = 400): EmulatorResponse => {
      this.settings.record({
        step: 'sign-in',
        verdict: 'rejected',
        status,
        error: 'invalid_request',
        errorDescription: description,
      });
      return { ...errorPage(status, 'invalid_request', description), closeConnection: bodyRead.tooLarge };
    };
    if (req.method !== 'POST') return refuse(`method ${req.method} is not allowed`, 405);
    if (bodyRead.tooLarge || parseMediaType(req.headers['content-type'])?.type !== 'application/x-www-form-urlencoded')
      return refuse('the decision must be a small application/x-www-form-urlencoded form');
    const form = new URLSearchParams(bodyRead.body.toString('utf8'));
    const requestId = form.get('request') ?? '';
    const pending = this.pending.get(requestId);
    if (!pending || pending.expiresAt <= this.settings.now())
      return refuse('this sign-in request is unknown, already answered or expired; start the sign-in again');
    // One answer per page.
    this.pending.set(requestId, { ...pending, expiresAt: 0 });
    const base = { step: 'sign-in' as const, clientId: pending.clientId, scope: pending.scope };
    if (form.get('decision') !== 'approve') {
      this.settings.record({ ...base, verdict: 'denied', status: 303, error: 'access_denied' });
      return this.redirect(
        pending.redirectUri,
        { error: 'access_denied', error_description: 'the user declined' },
        pending.state,
        303,
      );
    }
    const user = this.settings.directory.user(form.get('user') ?? undefined);
    if (!user) return refuse('choose one of the test users');
    const code = this.settings.grants.issueCode({
      clientId: pending.clientId,
      redirectUri: pending.redirectUri,
      challenge: pending.challenge,
      userId: user.id,
      scope: pending.scope,
    });
    this.settings.record({ ...base, verdict: 'accepted', status: 303, userId: user.id });
    return this.redirect(pending.redirectUri, { code }, pending.state, 303);
  }

  /** RFC 6749 §4.1.2: parameters added to the registered URI's own query; `iss` per RFC 9207. */
  private redirect(
    redirectUri: string,
    parameters: Record<string, string>,
    state: string | undefined,
    status: 302 | 303,
  ): EmulatorResponse {
    const url = new URL(redirectUri);
    for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value);
    if (state !== undefined) url.searchParams.set('state', state);
    url.searchParams.set('iss', this.settings.issuer);
    return { status, headers: { ...REDIRECT_HEADERS, location: url.href } };
  }
}

/** The parameter's value when it appears exactly once, otherwise `null`. */
function single(query: URLSearchParams, name: string): string | null {
  const values = query.getAll(name);
  return values.length === 1 && values[0] !== '' ? values[0] : null;
}
