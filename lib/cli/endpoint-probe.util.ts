import axios, { isAxiosError } from 'axios';
import { clockOffsetFromDateHeader } from '../util/date-header.util.js';
import { createOpaqueAgents } from '../util/opaque-agents.util.js';

export type ProbeResult =
  | {
      readonly reachable: true;
      readonly status: number;
      readonly durationMs: number;
      /** Platform clock minus local clock, from the `Date` header; absent when the server sent none. */
      readonly clockOffsetMs?: number;
    }
  | { readonly reachable: false; readonly code: string; readonly durationMs: number };

/**
 * The probe's method. HEAD carries no body and no credential, and asks only whether something is there: a token
 * endpoint answers it (405, as to any method but POST) without counting an exchange, and the emulator recognises it
 * as a probe rather than a refused token request.
 */
export const PROBE_METHOD = 'HEAD';

/**
 * A HEAD on the token endpoint, sent without any credential: any HTTP answer (a 405 is the usual one) shows that the
 * host is reachable, and its `Date` header gives the platform's clock. Goes through axios like the exchange, so proxy
 * settings from the environment apply to both alike.
 */
export async function probeEndpoint(url: string, timeoutMs: number): Promise<ProbeResult> {
  const agents = createOpaqueAgents();
  const startedAt = performance.now();
  const elapsed = () => Math.round(performance.now() - startedAt);
  try {
    const response = await axios.request({
      url,
      method: PROBE_METHOD,
      ...agents,
      timeout: timeoutMs,
      maxRedirects: 0,
      maxContentLength: 64 * 1024,
      responseType: 'text',
      validateStatus: () => true,
      headers: { Accept: 'application/json' },
    });
    return {
      reachable: true,
      status: response.status,
      durationMs: elapsed(),
      clockOffsetMs: clockOffsetFromDateHeader(response.headers.date, Date.now()),
    };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    const code = cause ?? (isAxiosError(error) ? error.code : undefined) ?? 'ERR_NETWORK';
    return { reachable: false, code, durationMs: elapsed() };
  } finally {
    agents.httpAgent.destroy();
    agents.httpsAgent.destroy();
  }
}
