import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { HttpService } from '@nestjs/axios';
import axios from 'axios';
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
  private readonly httpAgent = new HttpAgent({ keepAlive: true });
  private readonly httpsAgent = new HttpsAgent({ keepAlive: true });
  private readonly detachInterceptor: () => void;

  constructor(
    @Inject(PLATFORM_AUTH_CONFIG) config: ResolvedPlatformAuthConfig,
    interceptor: PlatformAuthInterceptor,
  ) {
    const instance = axios.create({ baseURL: config.baseUrl, httpAgent: this.httpAgent, httpsAgent: this.httpsAgent });
    this.detachInterceptor = interceptor.attach(instance);
    this.httpService = new HttpService(instance);
  }

  onModuleDestroy(): void {
    this.detachInterceptor();
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
