import { CanceledError, type AxiosResponse, type InternalAxiosRequestConfig } from 'axios';
import { AXIOS_ANSWERS, AxiosHops, type Adapter } from './axios-hops.js';
import { waitSignal } from '../call-cancel.js';
import { detachedConfig } from '../error-detach.js';
import { REDACTED_BEARER, leavingError, leavingResponse, statusError } from '../redaction.util.js';
import { resolveRequestUrl } from '../request-target.util.js';
import type { BearerPolicy } from '../engine/bearer.policy.js';
import { admitted } from '../engine/call-admission.js';
import { CallPlan, type CallFacts } from '../engine/call-plan.js';
import { runCall, type PolicyCall } from '../engine/policy-call.js';
import type { Followed } from '../engine/redirect-follow.js';

/**
 * What happens inside the adapter the interceptor installs, after every request interceptor has run. The caller's
 * config never holds the token: each request sent is a copy of it with the header (`AxiosHops`), so the library sees
 * each redirect, each 401 and each transient failure itself. It re-sends once after a 401 the token is to blame for,
 * re-sends as the retry policy says (`runCall`), applies the caller's `validateStatus`, and hands out responses and
 * errors built new (redaction.util).
 */
export class AuthorizedSend {
  private readonly hops: AxiosHops;

  constructor(
    private readonly policy: BearerPolicy,
    /** The interceptor's fast check of a config's target against the allowed origins. */
    private readonly targetsAllowedOrigin: (config: InternalAxiosRequestConfig) => boolean,
  ) {
    this.hops = new AxiosHops(policy);
  }

  send(adapter: Adapter, config: InternalAxiosRequestConfig): Promise<AxiosResponse> {
    const admission = this.policy.admission;
    if (admission === undefined) return this.sendAdmitted(adapter, config);
    return admitted(admission, () => this.sendAdmitted(adapter, config));
  }

  private sendAdmitted(adapter: Adapter, config: InternalAxiosRequestConfig): Promise<AxiosResponse> {
    const headers = config.headers;
    const header: unknown = headers.get('Authorization');
    const ours = header === undefined || header === null || header === REDACTED_BEARER;
    if (!ours || !this.targetsAllowedOrigin(config)) {
      if (header === REDACTED_BEARER) headers.delete('Authorization');
      return adapter(config).catch((error: unknown) => {
        throw leavingError(error, config, []);
      });
    }
    // What the config shows from now on, to interceptors, logs and a re-send of `error.config`.
    headers.set('Authorization', REDACTED_BEARER);
    const call = new AxiosCall(this.policy, this.hops, adapter, config);
    const cached = this.policy.peekToken();
    if (cached !== undefined) return runCall(this.policy, call, cached);
    return this.policy.token().then((token) => runCall(this.policy, call, token));
  }
}

/**
 * One call through the adapter. Its idempotency key goes into the caller's config, so every hop and re-send carries
 * it, and so does a config the caller sends again (`error.config`).
 */
class AxiosCall implements PolicyCall<AxiosResponse, AxiosResponse>, CallFacts {
  readonly plan: CallPlan;
  readonly answers = AXIOS_ANSWERS;
  /** Every token this call sent, so that none shows in what reaches the caller. */
  private readonly tokens: string[] = [];

  constructor(
    policy: BearerPolicy,
    private readonly hops: AxiosHops,
    private readonly adapter: Adapter,
    private readonly config: InternalAxiosRequestConfig,
  ) {
    policy.retry.countCall();
    this.plan = new CallPlan(policy, this, (header) => config.headers.has(header));
    const key = this.plan.key;
    if (key !== undefined) config.headers.set(key.header, key.value);
  }

  get method(): string {
    return (this.config.method ?? 'get').toUpperCase();
  }

  get optedOut(): boolean {
    return this.config.retry === false;
  }

  get body(): unknown {
    return this.config.data as unknown;
  }

  /**
   * What ends this call's waits: the caller's signal (axios takes any object with `aborted` and `addEventListener`;
   * a wait on the clock needs a real one) and `PlatformHttpService`'s cancellation. Read only when the call waits.
   */
  get signal(): AbortSignal | undefined {
    return waitSignal(this.config);
  }

  url(): string {
    const url = resolveRequestUrl(this.config);
    return url ? `${url.origin}${url.pathname}` : '';
  }

  send(token: string): Promise<Followed<AxiosResponse>> {
    if (this.tokens.at(-1) !== token) this.tokens.push(token);
    return this.hops.follow(this.adapter, this.config, token, this.tokens);
  }

  /** axios's own error for a cancelled request, as when the signal aborts a request in flight. */
  aborted(): CanceledError<unknown> {
    return new CanceledError(undefined, undefined, detachedConfig(this.config));
  }

  /** The caller's `validateStatus`, applied to a response built new; non-2xx ones are cleaned like errors. */
  finish(response: AxiosResponse): AxiosResponse {
    const status = response.status;
    const leaving = leavingResponse(response, this.config, status >= 200 && status < 300 ? [] : this.tokens);
    const validate = this.config.validateStatus;
    if (!status || !validate || validate(status)) return leaving;
    throw statusError(leaving, this.config);
  }
}
