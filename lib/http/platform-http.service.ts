import { HttpService } from '@nestjs/axios';
import axios, { type AxiosInstance } from 'axios';
import { createOpaqueAgents } from '../util/opaque-agents.util.js';
import type { PlatformAuthInterceptor } from './platform-auth.interceptor.js';

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

/** The client behind `PlatformHttpService`, and what tears it down. */
export interface PlatformHttpClient {
  readonly httpService: PlatformHttpService;
  /** Detaches the interceptor and closes the client's sockets. */
  close(): void;
}

/**
 * The axios instance behind `PlatformHttpService`: its own keep-alive agents (never the global default instance or
 * agents), and the interceptor installed once.
 */
export function createPlatformHttpClient(baseUrl: string, interceptor: PlatformAuthInterceptor): PlatformHttpClient {
  const agents = createOpaqueAgents();
  const instance = axios.create({ baseURL: baseUrl, ...agents });
  const detach = interceptor.attach(instance);
  return {
    httpService: new PlatformHttpService(instance),
    close: () => {
      detach();
      agents.httpAgent.destroy();
      agents.httpsAgent.destroy();
    },
  };
}
