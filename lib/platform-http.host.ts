import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { HttpService } from '@nestjs/axios';
import axios from 'axios';
import { createOpaqueAgents } from './opaque-agents.js';
import { PLATFORM_AUTH_CONFIG } from './platform-auth.constants.js';
import { PlatformAuthInterceptor } from './platform-auth.interceptor.js';
import type { ResolvedPlatformAuthConfig } from './platform-auth.options-resolver.js';

/**
 * Owns the axios instance behind the module's `HttpService`: its own keep-alive agents (never the global
 * default instance or agents), the interceptor installed once, and both torn down on shutdown.
 */
@Injectable()
export class PlatformHttpHost implements OnModuleDestroy {
  readonly httpService: HttpService;
  private readonly agents = createOpaqueAgents();
  private readonly detachInterceptor: () => void;

  constructor(
    @Inject(PLATFORM_AUTH_CONFIG) config: ResolvedPlatformAuthConfig,
    interceptor: PlatformAuthInterceptor,
  ) {
    const instance = axios.create({ baseURL: config.baseUrl, ...this.agents });
    this.detachInterceptor = interceptor.attach(instance);
    this.httpService = new HttpService(instance);
  }

  onModuleDestroy(): void {
    this.detachInterceptor();
    this.agents.httpAgent.destroy();
    this.agents.httpsAgent.destroy();
  }
}
