import { HttpService } from '@nestjs/axios';
import axios, { mergeConfig, type AxiosInstance, type AxiosRequestConfig, type AxiosResponse } from 'axios';
import { Observable } from 'rxjs';
import { createOpaqueAgents } from '../util/opaque-agents.util.js';
import { asCancelToken, CallCancel } from './call-cancel.js';
import type { PlatformAuthInterceptor } from './platform-auth.interceptor.js';

/** Sends the request, with the cancel token that stops it (none when the caller cancels through its own). */
type Send = (cancelToken: AxiosRequestConfig['cancelToken']) => Promise<AxiosResponse>;

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
 * `request`, and so through the library's adapter: each call is a cold Observable that sends on subscribe and
 * cancels on unsubscribe through a cancel token of the library's own (`CallCancel`), without the stock service's
 * per-request `CancelToken` and config copy, or an `AbortController` per request.
 */
export class PlatformHttpService extends HttpService {
  constructor(instance: AxiosInstance) {
    super(instance);
  }

  /* eslint-disable @typescript-eslint/no-explicit-any -- the stock HttpService's default for T, so that
     `response.data` types in apps exactly as it did */

  override request<T = any>(config: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (cancelToken) => this.axiosRef.request({ ...config, cancelToken }));
  }

  override get<T = any>(url: string, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (cancelToken) =>
      this.axiosRef.request({ ...config, method: 'get', url, cancelToken }),
    );
  }

  override delete<T = any>(url: string, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (cancelToken) =>
      this.axiosRef.request({ ...config, method: 'delete', url, cancelToken }),
    );
  }

  override head<T = any>(url: string, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (cancelToken) =>
      this.axiosRef.request({ ...config, method: 'head', url, cancelToken }),
    );
  }

  override post<T = any>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (cancelToken) =>
      this.axiosRef.request({ ...config, method: 'post', url, data, cancelToken }),
    );
  }

  override put<T = any>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (cancelToken) =>
      this.axiosRef.request({ ...config, method: 'put', url, data, cancelToken }),
    );
  }

  override patch<T = any>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (cancelToken) =>
      this.axiosRef.request({ ...config, method: 'patch', url, data, cancelToken }),
    );
  }

  // The form methods send what axios's own send (a multipart content type), but through `request` like the others:
  // axios's are bound to its inner object and would pass by anything installed on the instance's `request`.
  override postForm<T = any>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (cancelToken) =>
      this.axiosRef.request(form(config, 'post', url, data, cancelToken)),
    );
  }

  override putForm<T = any>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (cancelToken) => this.axiosRef.request(form(config, 'put', url, data, cancelToken)));
  }

  override patchForm<T = any>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.observe<T>(config, (cancelToken) =>
      this.axiosRef.request(form(config, 'patch', url, data, cancelToken)),
    );
  }

  /* eslint-enable @typescript-eslint/no-explicit-any */

  /**
   * Cold: nothing is sent until a subscription, and each subscription sends once. Unsubscribing before the response
   * cancels the request, as the stock service does, except for a `stream` response, which the subscriber reads on.
   * With the caller's own `cancelToken` the caller cancels; with the caller's own `signal`, either does.
   */
  private observe<T>(config: AxiosRequestConfig | undefined, send: Send): Observable<AxiosResponse<T>> {
    return new Observable<AxiosResponse<T>>((subscriber) => {
      // A config sent again (`error.config`) carries the library's token of its first call: not the caller's own.
      const callers = config?.cancelToken instanceof CallCancel ? undefined : config?.cancelToken;
      const cancel = callers ? undefined : new CallCancel();
      let settled = false;
      send(cancel ? asCancelToken(cancel) : callers).then(
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
        if (!settled && config?.responseType !== 'stream') cancel?.cancel();
      };
    });
  }
}

/** The config of a form method, merged as axios's own `postForm` merges it. */
function form(
  config: AxiosRequestConfig | undefined,
  method: string,
  url: string,
  data: unknown,
  cancelToken: AxiosRequestConfig['cancelToken'],
): AxiosRequestConfig {
  const headers = { 'Content-Type': 'multipart/form-data' };
  return mergeConfig({ ...config, cancelToken }, { method, url, data, headers });
}

/** The client behind `PlatformHttpService`, and what tears it down. */
interface PlatformHttpClient {
  readonly httpService: PlatformHttpService;
  /** Closes the client's sockets. */
  close(): void;
}

/**
 * The axios instance behind `PlatformHttpService`: its own keep-alive agents (never the global default instance or
 * agents), and the interceptor installed once.
 */
export function createPlatformHttpClient(baseUrl: string, interceptor: PlatformAuthInterceptor): PlatformHttpClient {
  const agents = createOpaqueAgents();
  const instance = axios.create({ baseURL: baseUrl, ...agents });
  interceptor.attach(instance);
  return {
    httpService: new PlatformHttpService(instance),
    close: () => {
      agents.httpAgent.destroy();
      agents.httpsAgent.destroy();
    },
  };
}
