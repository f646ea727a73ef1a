import { randomUUID } from 'node:crypto';
import type { AccessTokenStore } from './emulator.access-tokens.js';
import { MAX_REQUEST_BODY_BYTES, type EmulatorRequest, type EmulatorResponse } from './emulator.http.js';
import { IdempotencyJournal } from './emulator.idempotency.js';
import type { IntegrationRegistry } from './emulator.registry.js';
import { ApiRateWindows } from './emulator.rate-limit.js';
import type { IntegrationPermission } from './emulator.types.js';

/** Which `EmulatorCounters.apiCalls` bucket an answer counts in, besides `total`. */
type ApiCallOutcome = 'ok' | 'unauthorized' | 'forbidden' | 'throttled' | 'other';

interface PlaceholderApiAnswer {
  readonly response: EmulatorResponse;
  readonly outcome: ApiCallOutcome;
  /** Once the request was accepted under the integration's rate limit: whose, and the most in any second with it. */
  readonly accepted?: { readonly machineId: string; readonly inLastSecond: number };
}

interface PlaceholderRoute {
  readonly method: 'GET' | 'POST';
  readonly permission: IntegrationPermission;
  readonly handle: (machineId: string, body: Buffer, contentType: string | undefined) => EmulatorResponse;
}

/**
 * PLACEHOLDERS. The platform does not publish the paths, methods or payloads of the messaging and billing APIs; these
 * two routes exist only so that tests can exercise bearer tokens and the two permissions end to end.
 */
const PLACEHOLDER_ROUTES: ReadonlyMap<string, PlaceholderRoute> = new Map<string, PlaceholderRoute>([
  ['/api/messages', { method: 'POST', permission: 'Send message', handle: acceptMessage }],
  ['/api/billing', { method: 'GET', permission: 'Retrieve billing data', handle: placeholderBilling }],
]);

/** The protected side of the platform (docs/platform-contract.md#platform-apis): every route wants a bearer token. */
export class PlaceholderApi {
  private readonly windows = new ApiRateWindows();

  constructor(
    private readonly tokens: AccessTokenStore,
    private readonly registry: IntegrationRegistry,
    readonly idempotency = new IdempotencyJournal(),
  ) {}

  /** `arrivedAt`: emulator time when the request arrived, which the rate limit counts it at. */
  async answer(req: EmulatorRequest, pathname: string, arrivedAt: number): Promise<PlaceholderApiAnswer> {
    const bodyRead = await req.readBody();
    const route = PLACEHOLDER_ROUTES.get(pathname);
    if (!route) {
      const known = [...PLACEHOLDER_ROUTES.keys()].join(', ');
      return other(
        404,
        'not_found',
        `no route ${pathname}; the emulator serves the token endpoint and the placeholder routes ${known}`,
        bodyRead.tooLarge,
      );
    }
    if (req.method !== route.method) {
      return other(405, 'method_not_allowed', `${pathname} takes ${route.method}`, bodyRead.tooLarge, {
        allow: route.method,
      });
    }
    if (bodyRead.tooLarge)
      return other(413, 'invalid_request', `the request body exceeds ${MAX_REQUEST_BODY_BYTES / 1024} KiB`, true);

    const bearer = this.authenticate(req.headers.authorization);
    if (!bearer.ok) {
      return {
        outcome: 'unauthorized',
        response: {
          status: 401,
          headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
          body: { error: 'invalid_token', error_description: bearer.reason },
        },
      };
    }
    const integration = this.registry.get(bearer.machineId);
    const admitted = this.windows.admit(integration.machineId, integration.rateLimit, arrivedAt);
    if (typeof admitted !== 'number') return { outcome: 'throttled', response: admitted };
    const accepted = { machineId: integration.machineId, inLastSecond: admitted };
    if (!integration.permissions.includes(route.permission)) {
      return {
        outcome: 'forbidden',
        accepted,
        response: {
          status: 403,
          headers: { 'www-authenticate': 'Bearer error="insufficient_scope"' },
          body: {
            error: 'insufficient_scope',
            error_description: `the system integration lacks the permission "${route.permission}"`,
          },
        },
      };
    }
    const key = req.headers['idempotency-key'];
    const response = this.idempotency.answer(
      integration.machineId,
      typeof key === 'string' ? key : undefined,
      { method: route.method, path: pathname, body: bodyRead.body },
      () => route.handle(integration.machineId, bodyRead.body, req.headers['content-type']),
    );
    return { response, outcome: response.status < 300 ? 'ok' : 'other', accepted };
  }

  private authenticate(
    authorization: string | undefined,
  ): { ok: true; machineId: string } | { ok: false; reason: string } {
    if (!authorization)
      return { ok: false, reason: 'the Authorization header is missing; send Authorization: Bearer <access token>' };
    // RFC 6750 §2.1: the scheme is case-insensitive; the token is one b64token.
    const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i.exec(authorization);
    if (!match) return { ok: false, reason: 'the Authorization header is not of the form Bearer <access token>' };
    return this.tokens.check(match[1]);
  }
}

function other(
  status: number,
  error: string,
  description: string,
  closeConnection: boolean,
  headers?: Record<string, string>,
): PlaceholderApiAnswer {
  return {
    outcome: 'other',
    response: { status, headers, body: { error, error_description: description }, closeConnection },
  };
}

/** Placeholder for sending a message: accepts any JSON (or empty) body and echoes it back. */
function acceptMessage(machineId: string, body: Buffer, contentType: string | undefined): EmulatorResponse {
  let message: unknown = null;
  if (body.length > 0) {
    try {
      message = JSON.parse(body.toString('utf8'));
    } catch {
      return {
        status: 400,
        body: {
          error: 'invalid_request',
          error_description: `the body is not JSON (Content-Type ${contentType ?? 'missing'})`,
        },
      };
    }
  }
  return { status: 202, body: { accepted: true, messageId: randomUUID(), machineId, message, placeholder: true } };
}

/** Placeholder for billing data: fixed, obviously fake figures. */
function placeholderBilling(machineId: string): EmulatorResponse {
  return {
    status: 200,
    body: {
      machineId,
      placeholder: true,
      currency: 'EUR',
      items: [{ description: 'Messages sent (placeholder)', quantity: 0, amount: 0 }],
      total: 0,
    },
  };
}
