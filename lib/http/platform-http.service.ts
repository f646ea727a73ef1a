import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { HttpService } from '@nestjs/axios';
import axios, { type AxiosInstance } from 'axios';
import { PLATFORM_AUTH_CONFIG } from '../platform-auth.constants.js';
import type { ResolvedPlatformAuthConfig } from '../options/options.resolver.js';
import { createOpaqueAgents } from './opaque-agents.util.js';
import { PlatformAuthInterceptor } from './platform-auth.interceptor.js';

/**
 * The authenticated `HttpService`: its `baseURL` is the platform's, and requests to allowed origins carry a valid
 * bearer token. Inject this class (not `HttpService`) so that another `HttpModule` in scope can never change which
 * client you get.
 */
export class PlatformHttpService extends HttpService {
  constructor(instance: AxiosInstance) {
    super(instance);
  }
}

/**
 * Owns the axios instance behind `PlatformHttpService`: its own keep-alive agents (never the global default
 * instance or agents), the interceptor installed once, and both torn down on shutdown.
 */
@Injectable()
export class PlatformHttpHost implements OnApplicationShutdown {
  readonly httpService: PlatformHttpService;
  private readonly agents = createOpaqueAgents();
  private readonly detachInterceptor: () => void;

  constructor(@Inject(PLATFORM_AUTH_CONFIG) config: ResolvedPlatformAuthConfig, interceptor: PlatformAuthInterceptor) {
    const instance = axios.create({ baseURL: config.baseUrl, ...this.agents });
    this.detachInterceptor = interceptor.attach(instance);
    this.httpService = new PlatformHttpService(instance);
  }

  /** At application shutdown, after Nest's drain, like the token provider: in-flight platform calls complete. */
  onApplicationShutdown(): void {
    this.detachInterceptor();
    this.agents.httpAgent.destroy();
    this.agents.httpsAgent.destroy();
  }
}
