import { createPrivateKey, randomUUID, type KeyObject } from 'node:crypto';
import { CompactSign } from 'jose';
import type { PlatformEmulator, RegisteredIntegration } from 'nestjs-platform-auth/testing';

export interface AssertionParts {
  /** Replaces the default `{ alg: 'RS256', typ: 'JWT' }`. */
  header?: Record<string, unknown>;
  /** Merged over valid claims; a value of `undefined` removes the claim. */
  claims?: Record<string, unknown>;
  /** Signing key; default the integration's. */
  key?: KeyObject | Uint8Array;
  /** Claim times are computed from this instant (ms). */
  nowMs: number;
}

/**
 * Builds client assertions with jose directly, so a test can break exactly one rule of
 * docs/platform-contract.md#assertion at a time; the library's signer is deliberately not used here.
 */
export class AssertionFactory {
  readonly privateKey: KeyObject;

  constructor(
    privateKeyPem: string,
    private readonly integration: RegisteredIntegration,
    private readonly audience: string,
  ) {
    this.privateKey = createPrivateKey(privateKeyPem);
  }

  validClaims(nowMs: number): Record<string, unknown> {
    const now = Math.floor(nowMs / 1000);
    return {
      jti: randomUUID(),
      iss: this.integration.thumbprint,
      sub: this.integration.machineId,
      aud: this.audience,
      iat: now,
      nbf: now,
      exp: now + 300,
    };
  }

  async sign(parts: AssertionParts): Promise<string> {
    const claims = withoutUndefined({ ...this.validClaims(parts.nowMs), ...parts.claims });
    return new CompactSign(new TextEncoder().encode(JSON.stringify(claims)))
      .setProtectedHeader((parts.header ?? { alg: 'RS256', typ: 'JWT' }) as { alg: string })
      .sign(parts.key ?? this.privateKey);
  }
}

function withoutUndefined(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));
}

export interface TokenResponse {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** POSTs a token request form, the way docs/platform-contract.md#token-exchange describes it. */
export async function requestToken(
  platform: PlatformEmulator,
  token: string | undefined,
  overrides: Record<string, string | undefined> = {},
): Promise<TokenResponse> {
  const form = new URLSearchParams();
  const fields = { grant_type: 'clientcertificate', client_id: 'clientcertificate', token, ...overrides };
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) form.append(name, value);
  return readTokenResponse(await fetch(platform.tokenUrl, { method: 'POST', body: form }));
}

export async function readTokenResponse(response: Response): Promise<TokenResponse> {
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}

/** An access token obtained with a fresh valid assertion. */
export async function obtainAccessToken(
  platform: PlatformEmulator,
  assertions: AssertionFactory,
  nowMs: number,
): Promise<string> {
  const response = await requestToken(platform, await assertions.sign({ nowMs }));
  if (response.status !== 200) throw new Error(`token request failed: ${JSON.stringify(response.body)}`);
  return response.body.access_token as string;
}

export function callApi(
  platform: PlatformEmulator,
  route: 'messages' | 'billing',
  init: { token?: string; authorization?: string; body?: unknown } = {},
): Promise<Response> {
  const headers: Record<string, string> = {};
  const authorization = init.authorization ?? (init.token ? `Bearer ${init.token}` : undefined);
  if (authorization) headers.authorization = authorization;
  if (route === 'billing') return fetch(`${platform.url}/api/billing`, { headers });
  headers['content-type'] = 'application/json';
  return fetch(`${platform.url}/api/messages`, {
    method: 'POST',
    headers,
    body: JSON.stringify(init.body ?? { text: 'hello' }),
  });
}
