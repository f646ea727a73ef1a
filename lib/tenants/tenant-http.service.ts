import type { AxiosRequestConfig, AxiosResponse } from 'axios';
import { defer, from, switchMap, type Observable } from 'rxjs';
import type { PlatformTenants } from './platform-tenants.js';
import { NoCurrentTenantError } from './tenants.errors.js';

/**
 * `PlatformHttpService`'s methods, sent as the current tenant (`PlatformTenants.run`): the tenant is read when the
 * method is called, so a subscription that runs later, elsewhere, still sends as the tenant that asked. Outside a
 * tenant's context it throws `NoCurrentTenantError` rather than send anything unauthenticated or as someone else.
 */
export class PlatformTenantHttpService {
  /** @internal */
  constructor(private readonly tenants: PlatformTenants) {}

  request<T = unknown>(config: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.send((http) => http.request<T>(config));
  }

  get<T = unknown>(url: string, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.send((http) => http.get<T>(url, config));
  }

  delete<T = unknown>(url: string, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.send((http) => http.delete<T>(url, config));
  }

  head<T = unknown>(url: string, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.send((http) => http.head<T>(url, config));
  }

  post<T = unknown>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.send((http) => http.post<T>(url, data, config));
  }

  put<T = unknown>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.send((http) => http.put<T>(url, data, config));
  }

  patch<T = unknown>(url: string, data?: unknown, config?: AxiosRequestConfig): Observable<AxiosResponse<T>> {
    return this.send((http) => http.patch<T>(url, data, config));
  }

  private send<T>(
    call: (http: Awaited<ReturnType<PlatformTenants['get']>>['http']) => Observable<AxiosResponse<T>>,
  ): Observable<AxiosResponse<T>> {
    const tenantId = this.tenants.currentTenantId();
    if (tenantId === undefined) throw new NoCurrentTenantError();
    return defer(() => from(this.tenants.get(tenantId))).pipe(switchMap((tenant) => call(tenant.http)));
  }
}
