import axios, { isAxiosError, type AxiosInstance, type AxiosResponse } from 'axios';
import { clockOffsetFromDateHeader } from '../util/date-header.util.js';
import { createOpaqueAgents } from '../util/opaque-agents.util.js';
import {
  CLIENT_CERTIFICATE_GRANT,
  DEFAULT_TOKEN_LIFETIME_SECONDS,
  MAX_TOKEN_LIFETIME_SECONDS,
} from '../options/options.constants.js';
import { isTransientStatus, type TokenExchangeFailure } from '../platform-auth.errors.js';
import type { PlatformAuthSettings } from '../options/options.resolver.js';
import { sanitizeRemoteText } from '../util/remote-text.util.js';
import { isLoopbackHost } from '../util/loopback.util.js';
import { parseRetryAfter } from './retry-after.util.js';

interface TokenResponse {
  readonly accessToken: string;
  readonly tokenType: string;
  readonly expiresInSeconds: number;
}

export interface AttemptSuccess {
  readonly ok: true;
  readonly token: TokenResponse;
  readonly warnings: string[];
  readonly clockOffsetMs?: number;
}

export interface AttemptFailure {
  readonly ok: false;
  readonly reason: TokenExchangeFailure;
  readonly summary: string;
  /**
   * Passes by itself, so worth retrying within the exchange; the error the exchange ends with keeps the last
   * attempt's verdict (`TokenExchangeError.transient`).
   */
  readonly transient: boolean;
  readonly status?: number;
  readonly oauthError?: string;
  readonly oauthErrorDescription?: string;
  readonly retryAfterMs?: number;
  readonly networkCode?: string;
  readonly clockOffsetMs?: number;
  /** For `invalid_response`: the endpoint did answer JSON, so it is a token endpoint with a bad answer, not a wrong URL. */
  readonly answeredJson?: boolean;
  /** Retries worth making at most, when fewer than the policy's: a name that does not resolve gets one more look. */
  readonly maxRetries?: number;
}

type AttemptOutcome = AttemptSuccess | AttemptFailure;

/** What one attempt reads of the settings. */
type ExchangeClientSettings = Pick<
  PlatformAuthSettings,
  'tokenUrl' | 'tokenEncoding' | 'exchangeTimeoutMs' | 'maxResponseBytes'
>;

const NETWORK_TIMEOUT_CODES = new Set(['ECONNABORTED', 'ETIMEDOUT']);
/** The resolver's answers for a name that does not resolve; EAI_AGAIN may be a passing resolver hiccup, hence one retry. */
const DNS_FAILURE_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN']);
/**
 * RFC 6750 §2.1 `b64token`: the only characters a bearer token may have. Anything else (CR/LF above all) would be
 * sent mangled, or split the header; such a response is refused as invalid, like any other malformed token.
 */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * One HTTP attempt at the token endpoint: posts the form, reads at most `maxResponseBytes`, follows no redirect,
 * and turns whatever comes back into an outcome. Knows nothing of retries or caching.
 */
export class TokenExchangeClient {
  private readonly http: AxiosInstance;
  private readonly agents = createOpaqueAgents();

  constructor(
    private readonly config: ExchangeClientSettings,
    private readonly now: () => number,
  ) {
    this.http = axios.create({
      timeout: config.exchangeTimeoutMs,
      maxRedirects: 0,
      maxContentLength: config.maxResponseBytes,
      maxBodyLength: 64 * 1024,
      responseType: 'text',
      transformResponse: [(data: unknown) => data],
      validateStatus: () => true,
      decompress: true,
      ...this.agents,
      // A loopback endpoint is reached directly: an HTTP_PROXY from the environment would get the assertion in clear.
      ...(isLoopbackHost(new URL(config.tokenUrl).hostname) ? { proxy: false as const } : {}),
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
    });
  }

  /**
   * `timeoutMs` bounds the whole attempt, body included: axios's own timeout stops at the response headers, so a
   * server that drips its body would otherwise hold every waiting caller.
   */
  async attempt(
    assertion: string,
    signal: AbortSignal,
    timeoutMs = this.config.exchangeTimeoutMs,
  ): Promise<AttemptOutcome> {
    const token =
      this.config.tokenEncoding === 'base64' ? Buffer.from(assertion, 'utf8').toString('base64') : assertion;
    const secrets = [assertion, token];
    const body = new URLSearchParams({
      grant_type: CLIENT_CERTIFICATE_GRANT,
      client_id: CLIENT_CERTIFICATE_GRANT,
      token,
    }).toString();
    const deadline = AbortSignal.timeout(Math.max(1, timeoutMs));
    let response: AxiosResponse<unknown>;
    try {
      response = await this.http.post(this.config.tokenUrl, body, {
        signal: AbortSignal.any([signal, deadline]),
        timeout: timeoutMs,
      });
    } catch (error) {
      return this.transportFailure(error, signal, deadline, timeoutMs);
    }
    const clockOffsetMs = clockOffsetFromDateHeader(response.headers.date, this.now());
    const { status } = response;
    if (status >= 200 && status < 300) return this.parseSuccess(response, secrets, clockOffsetMs);
    if (status >= 300 && status < 400) {
      return {
        ok: false,
        reason: 'redirect',
        status,
        transient: false,
        clockOffsetMs,
        summary: `token endpoint answered HTTP ${status} (redirect, not followed)`,
      };
    }
    const { oauthError, oauthErrorDescription } = this.parseOAuthError(response.data, secrets);
    const transient = isTransientStatus(status);
    return {
      ok: false,
      reason: 'http_error',
      status,
      oauthError,
      oauthErrorDescription,
      transient,
      retryAfterMs: transient ? parseRetryAfter(response.headers['retry-after'], this.now()) : undefined,
      clockOffsetMs,
      summary: `token endpoint answered HTTP ${status}${oauthError ? ` ${oauthError}` : ''}${oauthErrorDescription ? `: ${oauthErrorDescription}` : ''}`,
    };
  }

  /** Closes idle keep-alive sockets so nothing holds the process open. */
  destroy(): void {
    this.agents.httpAgent.destroy();
    this.agents.httpsAgent.destroy();
  }

  private transportFailure(
    error: unknown,
    signal: AbortSignal,
    deadline: AbortSignal,
    timeoutMs: number,
  ): AttemptFailure {
    const code = isAxiosError(error) ? error.code : undefined;
    const cause = (error as { cause?: { code?: string } } | undefined)?.cause?.code;
    if (signal.aborted)
      return {
        ok: false,
        reason: 'aborted',
        transient: true,
        summary: 'token exchange cancelled (module shutting down)',
      };
    if (/maxContentLength/i.test((error as Error)?.message ?? '')) {
      return {
        ok: false,
        reason: 'invalid_response',
        transient: false,
        summary: `token response exceeds the ${this.config.maxResponseBytes}-byte limit`,
      };
    }
    if (deadline.aborted || (code && NETWORK_TIMEOUT_CODES.has(code))) {
      return {
        ok: false,
        reason: 'timeout',
        transient: true,
        networkCode: code ?? 'ETIMEDOUT',
        summary: `token endpoint did not answer within ${timeoutMs} ms`,
      };
    }
    // Anything else, a connection cut part-way through the body included, is a network failure worth retrying.
    const networkCode = cause ?? code ?? 'ERR_NETWORK';
    // The host only: the URL is configuration, never a secret, but naming the host is what the reader needs.
    const host = new URL(this.config.tokenUrl).host;
    if (DNS_FAILURE_CODES.has(networkCode)) {
      return {
        ok: false,
        reason: 'network_error',
        transient: true,
        maxRetries: 1,
        networkCode,
        summary: `token endpoint host ${host} does not resolve (${networkCode})`,
      };
    }
    return {
      ok: false,
      reason: 'network_error',
      transient: true,
      networkCode,
      summary: `token endpoint ${host} unreachable (${networkCode})`,
    };
  }

  private parseOAuthError(
    data: unknown,
    secrets: readonly string[],
  ): { oauthError?: string; oauthErrorDescription?: string } {
    const body = parseJson(data);
    if (!body || typeof body !== 'object' || Array.isArray(body)) return {};
    const { error, error_description: description } = body as Record<string, unknown>;
    return {
      oauthError: typeof error === 'string' && /^[\x20-\x7e]{1,64}$/.test(error) ? error : undefined,
      oauthErrorDescription: sanitizeRemoteText(description, secrets),
    };
  }

  private parseSuccess(
    response: AxiosResponse<unknown>,
    secrets: readonly string[],
    clockOffsetMs: number | undefined,
  ): AttemptOutcome {
    const body = parseJson(response.data);
    const invalid = (problem: string): AttemptFailure => ({
      ok: false,
      reason: 'invalid_response',
      status: response.status,
      transient: false,
      clockOffsetMs,
      answeredJson: body !== undefined,
      summary: `token response is invalid: ${problem}`,
    });
    if (body === undefined) {
      const type = sanitizeRemoteText(String(response.headers['content-type'] ?? 'no content type').split(';')[0]);
      return invalid(`body is not JSON (${type})`);
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      return invalid(
        `body is ${Array.isArray(body) ? 'an array' : body === null ? 'null' : `a ${typeof body}`}, not an object`,
      );
    }
    const fields = body as Record<string, unknown>;
    if (typeof fields.access_token !== 'string' || fields.access_token.trim() === '') {
      return invalid('access_token is missing or empty');
    }
    if (secrets.includes(fields.access_token)) return invalid('access_token echoes the assertion');
    if (!B64TOKEN.test(fields.access_token)) {
      return invalid('access_token has characters outside the RFC 6750 b64token set (A-Z a-z 0-9 - . _ ~ + / =)');
    }
    if (typeof fields.token_type !== 'string' || fields.token_type.toLowerCase() !== 'bearer') {
      return invalid(
        `token_type is ${typeof fields.token_type === 'string' ? `'${sanitizeRemoteText(fields.token_type)}'` : 'missing'}, expected Bearer`,
      );
    }
    const warnings: string[] = [];
    let expiresIn: number;
    if (fields.expires_in === undefined || fields.expires_in === null) {
      expiresIn = DEFAULT_TOKEN_LIFETIME_SECONDS;
      warnings.push(`token response has no expires_in; assuming ${DEFAULT_TOKEN_LIFETIME_SECONDS} s`);
    } else {
      const value =
        typeof fields.expires_in === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(fields.expires_in)
          ? Number(fields.expires_in)
          : fields.expires_in;
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 1) {
        return invalid(`expires_in must be a positive number of seconds, at least 1`);
      }
      // expires_in is authoritative however short: storms are prevented by single flight and the minimum interval
      // between exchanges, not by refusing a platform that issues short-lived tokens.
      expiresIn = value;
      if (expiresIn > MAX_TOKEN_LIFETIME_SECONDS) {
        warnings.push(`expires_in ${expiresIn} s is implausible; capped at ${MAX_TOKEN_LIFETIME_SECONDS} s`);
        expiresIn = MAX_TOKEN_LIFETIME_SECONDS;
      }
    }
    return {
      ok: true,
      token: { accessToken: fields.access_token, tokenType: 'Bearer', expiresInSeconds: expiresIn },
      warnings,
      clockOffsetMs,
    };
  }
}

function parseJson(data: unknown): unknown {
  if (typeof data !== 'string') return data;
  try {
    return JSON.parse(data) as unknown;
  } catch {
    return undefined;
  }
}
