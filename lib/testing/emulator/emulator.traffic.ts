import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { EmulatorInspector } from '../inspector/emulator.inspector.js';
import type { UserFlow } from '../user-flow/emulator.user-flow.js';
import { TOKEN_PATH } from './emulator.constants.js';
import { EmulatorControl } from './emulator.control.js';
import { faultAnswer, type FaultQueues, type FaultyAnswer } from './emulator.faults.js';
import {
  renderResponse,
  requestFromIncoming,
  sendResponse,
  writeResponse,
  type EmulatorRequest,
  type EmulatorResponse,
  type RenderedResponse,
} from './emulator.http.js';
import { emptyCounters } from './emulator.options.js';
import type { PlaceholderApi } from './emulator.placeholder-api.js';
import type { TokenEndpoint } from './emulator.token-endpoint.js';
import type { EmulatorCounters, EmulatorFault, TokenRequestRecord } from './emulator.types.js';

interface TrafficParts {
  /** Emulator time, ms. */
  readonly now: () => number;
  readonly tokenEndpoint: TokenEndpoint;
  readonly placeholderApi: PlaceholderApi;
  readonly userFlow: UserFlow;
  readonly faults: FaultQueues;
  readonly inspector?: EmulatorInspector;
  readonly control?: EmulatorControl;
  /** Aborted by `close()`, which cancels pending `delay` faults. */
  readonly shutdown: AbortSignal;
  readonly journalLimit: number;
}

/** How long a `delay` fault postpones a request: a timer over a socket, whatever the caller chose without one. */
export type DelayFault = (ms: number) => Promise<void>;

/**
 * Every request the emulator's server receives, routed: controls, probes and the inspector (which are not the
 * platform's API and count as nothing), then the token endpoint and the API, with one-shot faults, the journal of
 * token requests and the counters.
 */
export class EmulatorTraffic {
  private readonly journalEntries: TokenRequestRecord[] = [];
  private countersState: EmulatorCounters = emptyCounters();

  constructor(private readonly parts: TrafficParts) {}

  /** Aborted by the emulator's `close()`. */
  get shutdown(): AbortSignal {
    return this.parts.shutdown;
  }

  /** Token requests received, oldest first (a snapshot; at most `journalLimit` entries). */
  get journal(): readonly TokenRequestRecord[] {
    return Object.freeze([...this.journalEntries]);
  }

  /** A snapshot of the counters. */
  get counters(): EmulatorCounters {
    return { ...structuredClone(this.countersState), idempotency: this.parts.placeholderApi.idempotency.counters };
  }

  resetCounters(): void {
    this.countersState = emptyCounters();
    this.parts.placeholderApi.idempotency.resetCounters();
  }

  /** A request to the emulator's server: the controls and the inspector here, the rest as `answer` says. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const pathname = pathnameOf(req.url ?? '/');
    // The controls are not calls to the platform's API: they take no fault and count as nothing.
    if (this.parts.control && EmulatorControl.serves(pathname)) {
      return this.parts.control.answer(req, pathname).then(
        (response) => writeResponse(res, this.parts.now(), response),
        () => void res.destroy(),
      );
    }
    // The inspector is not part of the platform: it takes no fault and counts as no API call.
    if (this.parts.inspector && EmulatorInspector.serves(pathname)) {
      // A client that went away mid-form leaves nobody to answer.
      return this.parts.inspector.handle(req, res, pathname).catch(() => void res.destroy());
    }
    const answer = await this.answer(requestFromIncoming(req), (ms) =>
      delay(ms, undefined, { signal: this.parts.shutdown, ref: false }),
    );
    // A TCP reset, not a clean close: what a client sees when a load balancer or a crashing process drops it.
    if (answer === 'drop') res.socket?.resetAndDestroy();
    // A client that went away, or a delay cancelled by close(), leaves nobody to answer.
    else if (answer !== 'hang' && !res.headersSent && !res.destroyed) sendResponse(res, answer);
  }

  /**
   * The platform's side of a request, with or without a socket: the token endpoint's probe, then the token endpoint
   * and the API, with one-shot faults, the journal of token requests and the counters. `delayFault` waits out a
   * `delay` fault.
   */
  async answer(request: EmulatorRequest, delayFault: DelayFault): Promise<FaultyAnswer<RenderedResponse>> {
    const receivedAt = this.parts.now();
    const pathname = pathnameOf(request.url);
    if (pathname === TOKEN_PATH && isProbe(request)) return this.render({ status: 405, headers: { allow: 'POST' } });
    const isTokenRequest = pathname === TOKEN_PATH;
    let fault = this.parts.faults.take(isTokenRequest ? 'token' : 'api');
    try {
      if (fault?.kind === 'delay') {
        await delayFault(fault.ms);
        fault = undefined;
      }
      const answer = isTokenRequest
        ? await this.handleTokenRequest(request, receivedAt, fault)
        : await this.handleApiRequest(request, pathname, receivedAt, fault);
      return typeof answer === 'string' ? answer : this.render(answer);
    } catch {
      // Anything but a client that went away or a delay cancelled by close() is a bug of the emulator, which the
      // client should see as a server error rather than as a hang.
      return this.render({ status: 500, body: { error: 'server_error' } });
    }
  }

  private render(response: EmulatorResponse): RenderedResponse {
    return renderResponse(this.parts.now(), response);
  }

  private async handleTokenRequest(
    req: EmulatorRequest,
    receivedAt: number,
    fault: Exclude<EmulatorFault, { kind: 'delay' }> | undefined,
  ): Promise<FaultyAnswer<EmulatorResponse>> {
    const request = await this.parts.tokenEndpoint.receive(req);
    const exchanges = this.countersState.exchanges;
    exchanges.total += 1;
    if (fault) {
      const answer = faultAnswer(fault);
      exchanges.faulted += 1;
      this.record({
        at: receivedAt,
        ...this.parts.tokenEndpoint.summarize(request),
        status: typeof answer === 'string' ? 0 : answer.status,
        verdict: 'fault',
        fault: fault.kind,
      });
      return answer;
    }
    const { response, record } = await this.parts.tokenEndpoint.answer(request);
    if (record.verdict === 'accepted') exchanges.accepted += 1;
    else exchanges.rejected += 1;
    this.record({ at: receivedAt, ...record });
    return response;
  }

  private async handleApiRequest(
    req: EmulatorRequest,
    pathname: string,
    receivedAt: number,
    fault: Exclude<EmulatorFault, { kind: 'delay' }> | undefined,
  ): Promise<FaultyAnswer<EmulatorResponse>> {
    const apiCalls = this.countersState.apiCalls;
    apiCalls.total += 1;
    if (fault) {
      apiCalls.faulted += 1;
      const answer = faultAnswer(fault);
      if (typeof answer !== 'string' && answer.status === 429) apiCalls.throttled += 1;
      return answer;
    }
    const { response, outcome, accepted } = this.parts.userFlow.handles(pathname)
      ? { response: await this.parts.userFlow.answer(req, pathname), outcome: 'other' as const, accepted: undefined }
      : await this.parts.placeholderApi.answer(req, pathname, receivedAt);
    if (outcome !== 'other') apiCalls[outcome] += 1;
    if (accepted) {
      const { machineId, inLastSecond } = accepted;
      apiCalls.maxPerSecond[machineId] = Math.max(apiCalls.maxPerSecond[machineId] ?? 0, inLastSecond);
    }
    return response;
  }

  private record(entry: TokenRequestRecord): void {
    this.journalEntries.push(entry);
    if (this.journalEntries.length > this.parts.journalLimit) {
      this.journalEntries.splice(0, this.journalEntries.length - this.parts.journalLimit);
    }
  }
}

/**
 * A HEAD or OPTIONS on the token endpoint asks whether it is there (platform-auth doctor's reachability probe) and
 * carries no assertion: a real platform answers it without counting an exchange, and so does the emulator.
 */
function isProbe(req: EmulatorRequest): boolean {
  return req.method === 'HEAD' || req.method === 'OPTIONS';
}

/** The request-target without its query, compared as sent: `//x` stays a path instead of becoming a host. */
function pathnameOf(target: string): string {
  return target.split(/[?#]/, 1)[0];
}
