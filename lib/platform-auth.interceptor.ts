import type { Readable } from 'node:stream';
import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import {
  AxiosHeaders,
  isAxiosError,
  type AxiosInstance,
  type AxiosResponse,
  type InternalAxiosRequestConfig,
} from 'axios';
import { PLATFORM_AUTH_CONFIG } from './platform-auth.constants.js';
import type { ResolvedPlatformAuthConfig } from './platform-auth.options-resolver.js';
import { redactAxiosError } from './redaction.util.js';
import { TokenProvider } from './token.provider.js';

declare module 'axios' {
  interface AxiosRequestConfig {
    /** Set by `PlatformAuthInterceptor` on the one re-send after a 401; a second 401 then reaches the caller. */
    platformAuthRetry?: boolean;
  }
}

interface Registration {
  readonly request: number;
  readonly response: number;
}

const ABSOLUTE_URL = /^([a-z][a-z\d+\-.]*:)?\/\//i;

/** The URL axios will request, resolved the way axios resolves it (`baseURL` + `url`, or an absolute `url`). */
export function resolveRequestUrl(config: Pick<InternalAxiosRequestConfig, 'url' | 'baseURL' | 'allowAbsoluteUrls'>): URL | undefined {
  const url = config.url ?? '';
  const useBase = config.baseURL && (!ABSOLUTE_URL.test(url) || config.allowAbsoluteUrls === false);
  const full = useBase ? (url ? `${config.baseURL!.replace(/\/?\/$/, '')}/${url.replace(/^\/+/, '')}` : config.baseURL!) : url;
  try {
    return new URL(full);
  } catch {
    return undefined;
  }
}

function isStream(data: unknown): data is Readable {
  return typeof data === 'object' && data !== null && typeof (data as Readable).pipe === 'function';
}

/**
 * Adds `Authorization: Bearer <token>` to requests for allowed origins only, and on a 401 from such an origin
 * renews the token and re-sends once. Attach it to any axios instance; `PlatformAuthModule` attaches it to the
 * instance behind its `HttpService` and detaches it on shutdown.
 */
@Injectable()
export class PlatformAuthInterceptor implements OnModuleDestroy {
  /** Which token went out with which request, to invalidate exactly that one on a 401. */
  private readonly sentTokens = new WeakMap<InternalAxiosRequestConfig, string>();
  private readonly registrations = new Map<AxiosInstance, Registration>();

  constructor(
    private readonly tokens: TokenProvider,
    @Inject(PLATFORM_AUTH_CONFIG) private readonly config: ResolvedPlatformAuthConfig,
  ) {}

  /** Installs the interceptor on `instance` (once; a second call is a no-op) and returns a function removing it. */
  attach(instance: AxiosInstance): () => void {
    if (!this.registrations.has(instance)) {
      this.registrations.set(instance, {
        request: instance.interceptors.request.use((config) => this.authorize(config)),
        response: instance.interceptors.response.use(
          (response) => (response.status === 401 ? this.onUnauthorized(instance, response.config, response) : response),
          (error: unknown) => this.onError(instance, error),
        ),
      });
    }
    return () => this.detach(instance);
  }

  detach(instance: AxiosInstance): void {
    const registration = this.registrations.get(instance);
    if (!registration) return;
    instance.interceptors.request.eject(registration.request);
    instance.interceptors.response.eject(registration.response);
    this.registrations.delete(instance);
  }

  onModuleDestroy(): void {
    for (const instance of [...this.registrations.keys()]) this.detach(instance);
  }

  /** Whether requests to `url` may carry the token: same scheme, host and port as an allowed origin, no userinfo. */
  isAllowed(url: URL): boolean {
    return !url.username && !url.password && this.config.allowedOrigins.has(url.origin);
  }

  private async authorize(config: InternalAxiosRequestConfig): Promise<InternalAxiosRequestConfig> {
    const headers = AxiosHeaders.from(config.headers);
    config.headers = headers;
    if (headers.has('Authorization')) return config;
    const target = resolveRequestUrl(config);
    if (!target || !this.isAllowed(target)) return config;

    const token = await this.tokens.getAccessToken();
    headers.set('Authorization', `Bearer ${token}`);
    this.sentTokens.set(config, token);
    const callerHook = config.beforeRedirect;
    config.beforeRedirect = (options, responseDetails, requestDetails) => {
      this.stripOnForeignRedirect(options);
      callerHook?.(options, responseDetails, requestDetails);
    };
    return config;
  }

  private stripOnForeignRedirect(options: Record<string, unknown>): void {
    const origin = `${String(options.protocol)}//${String(options.hostname ?? options.host)}${options.port ? `:${String(options.port)}` : ''}`;
    let allowed = false;
    try {
      allowed = this.isAllowed(new URL(origin));
    } catch {
      allowed = false;
    }
    if (allowed) return;
    const headers = options.headers as Record<string, unknown> | undefined;
    for (const name of Object.keys(headers ?? {})) if (name.toLowerCase() === 'authorization') delete headers![name];
  }

  private async onError(instance: AxiosInstance, error: unknown): Promise<AxiosResponse> {
    if (isAxiosError(error) && error.response?.status === 401 && error.config) {
      return this.onUnauthorized(instance, error.config, error);
    }
    throw this.redacted(error);
  }

  private async onUnauthorized(
    instance: AxiosInstance,
    config: InternalAxiosRequestConfig,
    outcome: AxiosResponse | unknown,
  ): Promise<AxiosResponse> {
    const fail = () => {
      if (isAxiosError(outcome)) throw this.redacted(outcome);
      return outcome as AxiosResponse;
    };
    const sent = this.sentTokens.get(config);
    if (!sent || config.platformAuthRetry || isStream(config.data)) return fail();

    this.tokens.invalidate(sent);
    const headers = AxiosHeaders.from(config.headers);
    headers.delete('Authorization');
    return instance.request({ ...config, headers, platformAuthRetry: true });
  }

  private redacted(error: unknown): unknown {
    const config = isAxiosError(error) ? error.config : undefined;
    const sent = config ? this.sentTokens.get(config) : undefined;
    if (sent) redactAxiosError(error, sent);
    return error;
  }
}
