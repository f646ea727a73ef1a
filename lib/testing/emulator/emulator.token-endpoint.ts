import { CLIENT_CERTIFICATE_GRANT } from './emulator.constants.js';
import type { AccessTokenStore } from './emulator.access-tokens.js';
import {
  quote,
  tokenRejection,
  type AssertionVerifier,
  type DecodedAssertion,
  type OAuthErrorCode,
  type TokenRejection,
} from './emulator.assertion-verifier.js';
import { parseMediaType, type EmulatorRequest, type EmulatorResponse } from './emulator.http.js';
import type { TokenRequestRecord, TokenRequestRule } from './emulator.types.js';
import type { UserGrants } from '../user-flow/user-flow.grants.js';

const FORM_MEDIA_TYPE = 'application/x-www-form-urlencoded';
const FORM_PARAMETERS = ['grant_type', 'client_id', 'token'] as const;
/** RFC 6749 §5.1 and §5.2: token responses, good or bad, must not be cached. */
const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' } as const;

/** What the journal keeps of a token request: never the assertion itself. */
type TokenRequestSummary = Pick<TokenRequestRecord, 'method' | 'contentType' | 'grantType' | 'clientId'> &
  DecodedAssertion;

/** A token request with its body read and its form parsed, before the assertion is verified. */
interface ReceivedTokenRequest {
  readonly summary: TokenRequestSummary;
  /** The first request-level rule broken, if any. */
  readonly rejection?: TokenRejection;
  /** The `token` field, when the form carried one. */
  readonly token?: string;
  /** The body was refused part-way, so the connection cannot be reused. */
  readonly bodyLeftUnread: boolean;
  /** The form of a user grant (`authorization_code`, `refresh_token`), answered by `userGrants`. */
  readonly userGrantForm?: URLSearchParams;
}

interface TokenEndpointOutcome {
  readonly response: EmulatorResponse;
  readonly record: Omit<TokenRequestRecord, 'at'>;
}

interface TokenEndpointSettings {
  readonly verifier: AssertionVerifier;
  readonly tokens: AccessTokenStore;
  readonly tokenLifetimeSeconds: () => number;
  readonly invalidClientStatus: number;
  readonly userGrants?: UserGrants;
}

/**
 * `POST /loginservice/connect/token` (docs/platform-contract.md#token-exchange): the form checks, then the assertion,
 * then a new access token.
 */
export class TokenEndpoint {
  constructor(private readonly settings: TokenEndpointSettings) {}

  /**
   * Reads the whole (capped) body before any check, so every answer leaves the keep-alive connection clean, and
   * applies the request-level rules in order.
   */
  async receive(req: EmulatorRequest): Promise<ReceivedTokenRequest> {
    const bodyRead = await req.readBody();
    const contentType = req.headers['content-type'];
    const base = { method: req.method, contentType };
    const refuse = (rule: TokenRequestRule, error: OAuthErrorCode, description: string): ReceivedTokenRequest => ({
      summary: base,
      rejection: tokenRejection(rule, error, description),
      bodyLeftUnread: bodyRead.tooLarge,
    });

    if (req.method !== 'POST')
      return refuse('method', 'invalid_request', `method ${req.method} is not allowed; the token endpoint takes POST`);
    const mediaType = parseMediaType(contentType);
    if (mediaType?.type !== FORM_MEDIA_TYPE) {
      return refuse(
        'content-type',
        'invalid_request',
        `Content-Type is ${contentType ? `'${contentType}'` : 'missing'}; the token endpoint takes ${FORM_MEDIA_TYPE}`,
      );
    }
    if (mediaType.charset !== undefined && mediaType.charset !== 'utf-8') {
      return refuse('content-type', 'invalid_request', `charset is '${mediaType.charset}'; the form must be UTF-8`);
    }
    if (bodyRead.tooLarge) return refuse('body-size', 'invalid_request', 'the request body exceeds 64 KiB');

    const form = new URLSearchParams(bodyRead.body.toString('utf8'));
    const summary: TokenRequestSummary = {
      ...base,
      grantType: form.get('grant_type') ?? undefined,
      clientId: form.get('client_id') ?? undefined,
    };
    const token = form.get('token') || undefined;
    const withSummary = (rejection?: TokenRejection): ReceivedTokenRequest => ({
      summary,
      rejection,
      token,
      bodyLeftUnread: false,
    });

    const repeated = FORM_PARAMETERS.filter((name) => form.getAll(name).length > 1);
    if (repeated.length > 0) {
      return withSummary(
        tokenRejection(
          'duplicate-parameter',
          'invalid_request',
          `parameter(s) ${repeated.join(', ')} appear more than once (RFC 6749 §3.2)`,
        ),
      );
    }
    if (!summary.grantType)
      return withSummary(tokenRejection('grant_type', 'invalid_request', 'grant_type is missing'));
    if (this.settings.userGrants?.handles(summary.grantType))
      return { summary, userGrantForm: form, bodyLeftUnread: false };
    if (summary.grantType !== CLIENT_CERTIFICATE_GRANT) {
      return withSummary(
        tokenRejection(
          'grant_type',
          'unsupported_grant_type',
          `grant_type is ${quote(summary.grantType)}; the platform supports only '${CLIENT_CERTIFICATE_GRANT}'`,
        ),
      );
    }
    if (summary.clientId !== CLIENT_CERTIFICATE_GRANT) {
      return withSummary(
        tokenRejection(
          'client_id',
          'invalid_client',
          `client_id is ${quote(summary.clientId)}; it must be the literal '${CLIENT_CERTIFICATE_GRANT}'`,
        ),
      );
    }
    if (!token) return withSummary(tokenRejection('token', 'invalid_request', 'token (the signed JWT) is missing'));
    return withSummary();
  }

  /** The header and claims of the request's assertion, for the journal of a request a fault answers. */
  summarize(request: ReceivedTokenRequest): TokenRequestSummary {
    return request.token ? { ...request.summary, ...this.settings.verifier.decode(request.token) } : request.summary;
  }

  async answer(request: ReceivedTokenRequest): Promise<TokenEndpointOutcome> {
    if (request.rejection) return this.refusal(request.rejection, request.summary, request.bodyLeftUnread);
    if (request.userGrantForm) {
      const outcome = this.settings.userGrants!.answer(request.userGrantForm);
      if (!outcome.ok) return this.refusal(outcome, request.summary, false);
      const record = { ...request.summary, status: 200, verdict: 'accepted' as const };
      return { response: { status: 200, headers: NO_STORE, body: outcome.body }, record };
    }
    const verdict = await this.settings.verifier.verify(request.token!);
    const summary = { ...request.summary, header: verdict.header, claims: verdict.claims, rules: verdict.rules };
    if (!verdict.ok) return this.refusal(verdict, { ...summary, machineId: verdict.integration?.machineId }, false);

    const expiresIn = this.settings.tokenLifetimeSeconds();
    const accessToken = this.settings.tokens.issue(verdict.integration.machineId, expiresIn);
    return {
      response: {
        status: 200,
        headers: NO_STORE,
        body: { access_token: accessToken, token_type: 'Bearer', expires_in: expiresIn },
      },
      record: { ...summary, status: 200, verdict: 'accepted', machineId: verdict.integration.machineId },
    };
  }

  private refusal(
    rejection: TokenRejection,
    summary: TokenRequestSummary & { machineId?: string },
    closeConnection: boolean,
  ): TokenEndpointOutcome {
    const headers: Record<string, string> = { ...NO_STORE };
    let status = 400;
    if (rejection.rule === 'method') {
      status = 405;
      headers.allow = 'POST';
    } else if (rejection.error === 'invalid_client') {
      status = this.settings.invalidClientStatus;
      // RFC 6749 §5.2: a 401 names the authentication scheme the client should use.
      if (status === 401)
        headers['www-authenticate'] = 'ClientCertificate realm="loginservice", error="invalid_client"';
    }
    return {
      response: {
        status,
        headers,
        body: { error: rejection.error, error_description: rejection.description },
        closeConnection,
      },
      record: {
        ...summary,
        status,
        verdict: 'rejected',
        rule: rejection.rule,
        error: rejection.error,
        errorDescription: rejection.description,
      },
    };
  }
}
