import type { IncomingMessage } from 'node:http';
import { parseMediaType, readBody, type EmulatorResponse } from './emulator.http.js';
import type { EmulatorFault, FaultTarget } from './emulator.types.js';

/** A PEM certificate is about 1.5 KB; the JSON around it adds little. */
const MAX_CONTROL_BODY_BYTES = 16 * 1024;
/** Copies of one fault queued by one request: enough for any test, not a way to fill the emulator's memory. */
export const MAX_FAULT_TIMES = 1000;

/** The JSON object a control request carries, or the answer that refuses it. */
export async function readJsonObject(
  req: IncomingMessage,
  shape: string,
): Promise<{ value: Record<string, unknown> } | { refused: EmulatorResponse }> {
  const read = await readBody(req, MAX_CONTROL_BODY_BYTES);
  if (read.tooLarge) {
    return {
      refused: {
        ...controlFailure(413, 'too_large', `the body is over ${MAX_CONTROL_BODY_BYTES} bytes`),
        closeConnection: true,
      },
    };
  }
  if (parseMediaType(req.headers['content-type'])?.type !== 'application/json') {
    return { refused: controlFailure(415, 'unsupported_media_type', `send ${shape} as application/json`) };
  }
  let value: unknown;
  try {
    value = JSON.parse(read.body.toString('utf8'));
  } catch {
    return { refused: controlFailure(400, 'invalid_request', 'the body is not JSON') };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { refused: controlFailure(400, 'invalid_request', `the body must be a JSON object: ${shape}`) };
  }
  return { value: value as Record<string, unknown> };
}

interface FaultRequest {
  readonly target: FaultTarget;
  readonly fault: EmulatorFault;
  readonly times: number;
}

/**
 * `{ target, fault, times? }` as `injectFault(fault, target)` takes it, `times` copies; the fault's own values are
 * checked by the queue. JSON has no `Date`: a `retry-after` fault's `retryAfter` is whole seconds here.
 */
export function faultRequest(body: Record<string, unknown>): FaultRequest | string {
  const { target, fault, times = 1 } = body;
  if (target !== 'token' && target !== 'api') return `target must be 'token' or 'api', got ${JSON.stringify(target)}`;
  if (typeof fault !== 'object' || fault === null || Array.isArray(fault))
    return 'fault must be an object, e.g. { "kind": "status", "status": 503 }';
  if (!Number.isSafeInteger(times) || (times as number) < 1 || (times as number) > MAX_FAULT_TIMES)
    return `times must be a whole number from 1 to ${MAX_FAULT_TIMES}, got ${JSON.stringify(times)}`;
  const { headers, body: faultBody } = fault as { headers?: unknown; body?: unknown };
  if (headers !== undefined && !isStringRecord(headers)) return 'fault.headers must map header names to strings';
  if (faultBody !== undefined && typeof faultBody !== 'string' && (typeof faultBody !== 'object' || faultBody === null))
    return 'fault.body must be a string or a JSON object';
  return { target, fault: fault as EmulatorFault, times: times as number };
}

export function controlFailure(status: number, error: string, message: string): EmulatorResponse {
  return { status, body: { error, message } };
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((each) => typeof each === 'string')
  );
}
