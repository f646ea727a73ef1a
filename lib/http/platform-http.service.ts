import { HttpService } from '@nestjs/axios';
import axios, { type AxiosInstance, type AxiosRequestConfig, type AxiosResponse } from 'axios';
import { Observable } from 'rxjs';
import { createOpaqueAgents } from '../util/opaque-agents.util.js';
import type { PlatformAuthInterceptor } from './platform-auth.interceptor.js';

/** Sends the request, with the signal that aborts it (the caller's own when it cancels through `cancelToken`). */
type Send = (signal: AxiosRequestConfig['signal']) => Promise<AxiosResponse>;

declare module 'axios' {
  interface AxiosRequestConfig {
    /**
     * `false`: this request is never re-sent after a transient failure, whatever the integration's `retry` policy
     * says (the one re-send after a 401 still happens). Read by `PlatformHttpService` and `PlatformAuthInterceptor`.
     */
    retry?: boolean;
  }
}

/**
 * The authenticated `HttpService`: its `baseURL` is the platform's, and requests to allowed origins carry a valid
 * bearer token. Inject this class (not `HttpService`) so that another `HttpModule` in scope can never change which
 * client you get.
 *
 * It is an `HttpService` (apps inject it as one) whose request methods go straight to the axios instance's
 * `request`, and so through the library's adapter: each call is a cold Observable that sends on subscribe and aborts
 * on unsubscribe through an `AbortController`, without the stock service's per-request `CancelToken` and config copy.
 */
export class PlatformHttpService extends HttpService {
  constructor(instance: AxiosInstance) {
    super(instance);
  }

  /* eslint-disable @typescript-eslint/no-explicit-any -- the stock HttpService's default for T, so that
     `response.data` types in apps exactly as it did */

  override request<T = any>(config: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (signal) => this.axiosRef.request({ ...config, signal }));
  }

  override get<T = any>(url: string, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (signal) => this.axiosRef.request({ ...config, method: 'get', url, signal }));
  }

  override delete<T = any>(url: string, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (signal) => this.axiosRef.request({ ...config, method: 'delete', url, signal }));
  }

  override head<T = any>(url: string, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (signal) => this.axiosRef.request({ ...config, method: 'head', url, signal }));
  }

  override post<T = any>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (signal) => this.axiosRef.request({ ...config, method: 'post', url, data, signal }));
  }

  override put<T = any>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (signal) => this.axiosRef.request({ ...config, method: 'put', url, data, signal }));
  }

  override patch<T = any>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (signal) =>
      this.axiosRef.request({ ...config, method: 'patch', url, data, signal }),
    );
  }

  // The form methods keep axios's own (it sets the multipart content type), with the same Observable around them.
  override postForm<T = any>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (signal) => this.axiosRef.postForm(url, data, { ...config, signal }));
  }

  override putForm<T = any>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (signal) => this.axiosRef.putForm(url, data, { ...config, signal }));
  }

  override patchForm<T = any>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (signal) => this.axiosRef.patchForm(url, data, { ...config, signal }));
  }

  /* eslint-enable @typescript-eslint/no-explicit-any */

  /**
   * Cold: nothing is sent until a subscription, and each subscription sends once. Unsubscribing before the response
   * aborts the request, as the stock service does, except for a `stream` response, which the subscriber reads on.
   * With the caller's own `cancelToken` the caller cancels; with the caller's own `signal`, either aborts.
   */
  private observe<T>(config: AxiosRequestConfig | undefined, send: Send): Observable<AxiosResponse<T>> {
    return new Observable<AxiosResponse<T>>((subscriber) => {
      const controller = config?.cancelToken ? undefined : new AbortController();
      let settled = false;
      const signal = controller
        ? config?.signal
          ? anySignal(config.signal, controller.signal)
          : controller.signal
        : config?.signal;
      send(signal).then(
        (response) => {
          settled = true;
          subscriber.next(response as AxiosResponse<T>);
          subscriber.complete();
        },
        (error: unknown) => {
          settled = true;
          subscriber.error(error);
        },
      );
      return () => {
        if (!settled && config?.responseType !== 'stream') controller?.abort();
      };
    });
  }
}

function anySignal(caller: NonNullable<AxiosRequestConfig['signal']>, own: AbortSignal): AbortSignal {
  return AbortSignal.any([caller as AbortSignal, own]);
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
