import type { EmulatorResponse } from './emulator.http.js';
import type { EmulatorFault, FaultTarget } from './emulator.types.js';

/** Cut mid-value, the way a body truncated by a crashing upstream or a proxy looks. */
const TRUNCATED_JSON = '{"access_token":"eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOi';
const HTML_ERROR_PAGE =
  '<!DOCTYPE html>\n<html><head><title>Service Unavailable</title></head>' +
  '<body><h1>Service Unavailable</h1><p>The server is temporarily unable to service your request.</p></body></html>\n';

/** One-shot faults waiting for the next request to each target, first injected first used. */
export class FaultQueues {
  private readonly queues: Record<FaultTarget, EmulatorFault[]> = { token: [], api: [] };

  push(fault: EmulatorFault, target: FaultTarget): void {
    if (!(target in this.queues))
      throw new Error(`injectFault: target must be 'token' or 'api', got '${String(target)}'`);
    this.queues[target].push(checkedFault(fault));
  }

  /** The faults still queued, per target, first used first. */
  pending(): Record<FaultTarget, EmulatorFault[]> {
    return { token: [...this.queues.token], api: [...this.queues.api] };
  }

  /** Drops every pending fault (`platform-auth emulator reset`). */
  clear(): void {
    this.queues.token.length = 0;
    this.queues.api.length = 0;
  }

  take(target: FaultTarget): EmulatorFault | undefined {
    return this.queues[target].shift();
  }
}

/** What the emulator does with a request: answer it, reset its connection (`drop`), or leave it waiting (`hang`). */
export type FaultyAnswer<Answer> = Answer | 'drop' | 'hang';

/** The answer `fault` gives instead of the endpoint's. `delay` is not one: it only postpones normal processing. */
export function faultAnswer(fault: Exclude<EmulatorFault, { kind: 'delay' }>): FaultyAnswer<EmulatorResponse> {
  switch (fault.kind) {
    case 'status': {
      const textHeaders: Record<string, string> =
        typeof fault.body === 'string' ? { 'content-type': 'text/plain; charset=utf-8' } : {};
      return { status: fault.status, headers: { ...textHeaders, ...fault.headers }, body: fault.body };
    }
    case 'malformed-json':
      return { status: 200, headers: { 'content-type': 'application/json' }, body: TRUNCATED_JSON };
    case 'html':
      return { status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: HTML_ERROR_PAGE };
    case 'retry-after': {
      const { status, retryAfter } = fault;
      return {
        status,
        headers: { 'retry-after': retryAfter instanceof Date ? retryAfter.toUTCString() : String(retryAfter) },
        body: {
          error: status === 429 ? 'rate_limited' : 'temporarily_unavailable',
          error_description: 'injected fault: try again after Retry-After',
        },
      };
    }
    case 'drop':
    case 'hang':
      return fault.kind;
  }
}

function checkedFault(fault: EmulatorFault): EmulatorFault {
  switch (fault?.kind) {
    case 'status':
      if (!Number.isInteger(fault.status) || fault.status < 100 || fault.status > 599) {
        throw new Error(`injectFault: status must be an integer from 100 to 599, got ${String(fault.status)}`);
      }
      return fault;
    case 'delay':
      if (!Number.isFinite(fault.ms) || fault.ms < 0)
        throw new Error(`injectFault: delay ms must be a finite number >= 0, got ${String(fault.ms)}`);
      return fault;
    case 'retry-after': {
      const { status, retryAfter } = fault;
      if (status !== 429 && status !== 503)
        throw new Error(`injectFault: a retry-after fault answers 429 or 503, got ${String(status)}`);
      const seconds = typeof retryAfter === 'number' && Number.isSafeInteger(retryAfter) && retryAfter >= 0;
      if (!seconds && !(retryAfter instanceof Date && Number.isFinite(retryAfter.getTime())))
        throw new Error('injectFault: retryAfter must be whole seconds >= 0 or a valid Date');
      return fault;
    }
    case 'hang':
    case 'drop':
    case 'malformed-json':
    case 'html':
      return fault;
    default:
      throw new Error(`injectFault: unknown fault kind '${String((fault as { kind?: unknown } | undefined)?.kind)}'`);
  }
}
