import type { AccessTokenStore } from '../emulator/emulator.access-tokens.js';
import { AUTHORIZE_PATH, ME_PATH } from '../emulator/emulator.constants.js';
import type { EmulatorRequest, EmulatorResponse } from '../emulator/emulator.http.js';
import { AuthorizeEndpoint } from './user-flow.authorize.js';
import { UserDirectory } from './user-flow.clients.js';
import { REVOCATION_PATH, UserGrants } from './user-flow.grants.js';
import { DECISION_PATH } from './user-flow.page.js';
import type { UserFlowRecord } from './user-flow.types.js';

interface UserFlowSettings {
  readonly now: () => number;
  readonly issuer: string;
  readonly machineTokens: AccessTokenStore;
  readonly tokenLifetimeSeconds: () => number;
  readonly invalidClientStatus: number;
  readonly journalLimit: number;
  /** Authorization requests whose sign-in page is still open; default 10 000. */
  readonly maxPendingSignIns?: number;
}

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i;

/**
 * The emulator's user sign-in: registered public clients and test users, the authorize endpoint and its sign-in
 * page, the user grants of the token endpoint, and `GET /api/me` for user tokens. Keeps its own journal.
 */
export class UserFlow {
  readonly directory = new UserDirectory();
  readonly grants: UserGrants;
  private readonly authorizeEndpoint: AuthorizeEndpoint;
  private readonly entries: UserFlowRecord[] = [];

  constructor(private readonly settings: UserFlowSettings) {
    const record = (entry: Omit<UserFlowRecord, 'at'>): void => this.record(entry);
    this.grants = new UserGrants({
      now: settings.now,
      directory: this.directory,
      tokenLifetimeSeconds: settings.tokenLifetimeSeconds,
      invalidClientStatus: settings.invalidClientStatus,
      record,
    });
    this.authorizeEndpoint = new AuthorizeEndpoint({
      now: settings.now,
      issuer: settings.issuer,
      directory: this.directory,
      grants: this.grants,
      record,
      maxPending: settings.maxPendingSignIns,
    });
  }

  handles(pathname: string): boolean {
    return (
      pathname === AUTHORIZE_PATH || pathname === DECISION_PATH || pathname === ME_PATH || pathname === REVOCATION_PATH
    );
  }

  async answer(req: EmulatorRequest, pathname: string): Promise<EmulatorResponse> {
    if (pathname === AUTHORIZE_PATH) {
      const bodyRead = await req.readBody();
      return { ...this.authorizeEndpoint.authorize(req), closeConnection: bodyRead.tooLarge };
    }
    if (pathname === DECISION_PATH) return this.authorizeEndpoint.decide(req);
    if (pathname === REVOCATION_PATH) return this.grants.revocation(req);
    return this.me(req);
  }

  get journal(): readonly UserFlowRecord[] {
    return Object.freeze(this.entries.map((entry) => ({ ...entry })));
  }

  /** PLACEHOLDER (the platform's user APIs are not published): who the bearer of a user token is. */
  private async me(req: EmulatorRequest): Promise<EmulatorResponse> {
    const bodyRead = await req.readBody();
    const answer = (
      status: number,
      body: object,
      headers?: Record<string, string>,
      userId?: string,
    ): EmulatorResponse => {
      const error = status === 200 ? undefined : (body as { error?: string }).error;
      this.record({ step: 'me', verdict: status === 200 ? 'accepted' : 'rejected', status, userId, error });
      return { status, body, headers, closeConnection: bodyRead.tooLarge };
    };
    if (req.method !== 'GET')
      return answer(405, { error: 'method_not_allowed', error_description: `${ME_PATH} takes GET` }, { allow: 'GET' });
    const match = BEARER.exec(req.headers.authorization ?? '');
    if (!match) {
      return answer(
        401,
        { error: 'invalid_token', error_description: 'send Authorization: Bearer <user access token>' },
        { 'www-authenticate': 'Bearer error="invalid_token"' },
      );
    }
    const user = this.grants.checkAccessToken(match[1]);
    if (!user.ok) {
      if (this.settings.machineTokens.check(match[1]).ok) {
        return answer(
          403,
          {
            error: 'insufficient_scope',
            error_description: `${ME_PATH} answers for signed-in users; this is a system integration's token`,
          },
          { 'www-authenticate': 'Bearer error="insufficient_scope"' },
        );
      }
      return answer(
        401,
        { error: 'invalid_token', error_description: user.reason },
        { 'www-authenticate': 'Bearer error="invalid_token"' },
      );
    }
    const profile = this.directory.user(user.userId);
    return answer(
      200,
      {
        sub: user.userId,
        name: profile?.name,
        email: profile?.email,
        clientId: user.clientId,
        scope: user.scope,
        placeholder: true,
      },
      undefined,
      user.userId,
    );
  }

  private record(entry: Omit<UserFlowRecord, 'at'>): void {
    this.entries.push({ at: this.settings.now(), ...entry });
    if (this.entries.length > this.settings.journalLimit)
      this.entries.splice(0, this.entries.length - this.settings.journalLimit);
  }
}
