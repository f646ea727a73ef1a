import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { EmulatorInspector } from '../inspector/emulator.inspector.js';
import type { UserFlow } from '../user-flow/emulator.user-flow.js';
import { TOKEN_PATH } from './emulator.constants.js';
import { EmulatorControl } from './emulator.control.js';
import { answerWithFault, type FaultQueues } from './emulator.faults.js';
import { writeResponse } from './emulator.http.js';
import { emptyCounters } from './emulator.options.js';
import type { PlaceholderApi } from './emulator.placeholder-api.js';
import type { TokenEndpoint } from './emulator.token-endpoint.js';
import type { EmulatorCounters, EmulatorFault, TokenRequestRecord } from './emulator.types.js';

export interface TrafficParts {
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

/**
 * Every request the emulator's server receives, routed: controls, probes and the inspector (which are not the
 * platform's API and count as nothing), then the token endpoint and the API, with one-shot faults, the journal of
 * token requests and the counters.
 */
export class EmulatorTraffic {
  private readonly journalEntries: TokenRequestRecord[] = [];
  private countersState: EmulatorCounters = emptyCounters();

  constructor(private readonly parts: TrafficParts) {}

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

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const receivedAt = this.parts.now();
    const pathname = pathnameOf(req);
    // Controls and probes are not calls to the platform's API: they take no fault and count as nothing.
    if (this.parts.control && EmulatorControl.serves(pathname)) {
      return this.parts.control.answer(req, pathname).then(
        (response) => writeResponse(res, this.parts.now(), response),
        () => void res.destroy(),
      );
    }
    if (pathname === TOKEN_PATH && isProbe(req)) {
      return writeResponse(res, this.parts.now(), { status: 405, headers: { allow: 'POST' } });
    }
    // The inspector is not part of the platform: it takes no fault and counts as no API call.
    if (this.parts.inspector && EmulatorInspector.serves(pathname)) {
      // A client that went away mid-form leaves nobody to answer.
      return this.parts.inspector.handle(req, res, pathname).catch(() => void res.destroy());
    }
    const isTokenRequest = pathname === TOKEN_PATH;
    let fault = this.parts.faults.take(isTokenRequest ? 'token' : 'api');
    try {
      if (fault?.kind === 'delay') {
        await delay(fault.ms, undefined, { signal: this.parts.shutdown, ref: false });
        fault = undefined;
      }
      if (isTokenRequest) await this.handleTokenRequest(req, res, receivedAt, fault);
      else await this.handleApiRequest(req, res, receivedAt, fault);
    } catch {
      // A client that went away, or a delay cancelled by close(), leaves nobody to answer; anything else is a bug
      // of the emulator, which the client should see as a server error rather than as a hang.
      if (!res.headersSent && !res.destroyed)
        writeResponse(res, this.parts.now(), { status: 500, body: { error: 'server_error' } });
    }
  }

  private async handleTokenRequest(
    req: IncomingMessage,
    res: ServerResponse,
    receivedAt: number,
    fault: Exclude<EmulatorFault, { kind: 'delay' }> | undefined,
  ): Promise<void> {
    const request = await this.parts.tokenEndpoint.receive(req);
    const exchanges = this.countersState.exchanges;
    exchanges.total += 1;
    if (fault) {
      const status = answerWithFault(fault, res, this.parts.now());
      exchanges.faulted += 1;
      this.record({
        at: receivedAt,
        ...this.parts.tokenEndpoint.summarize(request),
        status,
        verdict: 'fault',
        fault: fault.kind,
      });
      return;
    }
    const { response, record } = await this.parts.tokenEndpoint.answer(request);
    writeResponse(res, this.parts.now(), response);
    if (record.verdict === 'accepted') exchanges.accepted += 1;
    else exchanges.rejected += 1;
    this.record({ at: receivedAt, ...record });
  }

  private async handleApiRequest(
    req: IncomingMessage,
    res: ServerResponse,
    receivedAt: number,
    fault: Exclude<EmulatorFault, { kind: 'delay' }> | undefined,
  ): Promise<void> {
    const apiCalls = this.countersState.apiCalls;
    apiCalls.total += 1;
    if (fault) {
      apiCalls.faulted += 1;
      if (answerWithFault(fault, res, this.parts.now()) === 429) apiCalls.throttled += 1;
      return;
    }
    const pathname = pathnameOf(req);
    const { response, outcome, accepted } = this.parts.userFlow.handles(pathname)
      ? { response: await this.parts.userFlow.answer(req, pathname), outcome: 'other' as const, accepted: undefined }
      : await this.parts.placeholderApi.answer(req, pathname, receivedAt);
    writeResponse(res, this.parts.now(), response);
    if (outcome !== 'other') apiCalls[outcome] += 1;
    if (accepted) {
      const { machineId, inLastSecond } = accepted;
      apiCalls.maxPerSecond[machineId] = Math.max(apiCalls.maxPerSecond[machineId] ?? 0, inLastSecond);
    }
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
function isProbe(req: IncomingMessage): boolean {
  return req.method === 'HEAD' || req.method === 'OPTIONS';
}

/** The request-target without its query, compared as sent: `//x` stays a path instead of becoming a host. */
function pathnameOf(req: IncomingMessage): string {
  return (req.url ?? '/').split(/[?#]/, 1)[0];
}
