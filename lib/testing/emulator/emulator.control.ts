import type { IncomingMessage } from 'node:http';
import { emulatorHostNames, fromLoopback, type EmulatorResponse } from './emulator.http.js';
import { controlFailure as failure, faultRequest, readJsonObject } from './emulator.control-requests.js';
import type { FaultQueues } from './emulator.faults.js';
import type { IntegrationRegistry } from './emulator.registry.js';
import type { RegisteredIntegration, RegisterIntegrationInput } from './emulator.types.js';

export const CONTROL_PATH = '/_emulator/control';

/** What the controls act on: the emulator's own methods, so that a control does exactly what a test's call does. */
interface ControlSources {
  readonly url: string;
  readonly registry: IntegrationRegistry;
  readonly faults: FaultQueues;
  readonly emulator: {
    readonly audience: string;
    registerIntegration(input: RegisterIntegrationInput): RegisteredIntegration;
    replaceCertificate(machineId: string, certificatePem: string): RegisteredIntegration;
    resetCounters(): void;
  };
}

/**
 * `/_emulator/control/`: the portal's actions and the test controls for programs on this machine (`platform-auth
 * emulator upload | add | fault | reset`), as JSON. Only for clients on loopback that name the emulator in `Host`,
 * and never for a browser: a request carrying `Origin` or `Sec-Fetch-Site` is refused, and a JSON body from another
 * site needs a CORS preflight this endpoint never grants.
 *
 * - `GET  /_emulator/control/integrations`: `{ integrations: [{ machineId, name, thumbprint, status }] }`
 * - `POST /_emulator/control/integrations` with `{ certificatePem, name? }`: registers an integration, as the
 *   portal's "Add System integration" does; 201 `{ integration, url, audience }`, else 400 `{ error, message }`.
 * - `PUT  /_emulator/control/integrations/{machineId}/certificate` with `{ certificatePem }`: replaces the
 *   integration's certificate, as the portal's upload does; `{ integration }` on success, else
 *   `{ error, message }` (400 a malformed or non-RSA certificate, 404 no such integration).
 * - `POST /_emulator/control/faults` with `{ target: 'token' | 'api', fault, times? }`: queues what
 *   `injectFault(fault, target)` queues, `times` copies; `{ pending: { token, api } }`, the faults now waiting.
 * - `POST /_emulator/control/reset`: drops every pending fault and zeroes the counters; `{ cleared: { token, api } }`.
 */
export class EmulatorControl {
  private readonly hosts: ReadonlySet<string>;

  constructor(private readonly sources: ControlSources) {
    this.hosts = emulatorHostNames(sources.url);
  }

  static serves(pathname: string): boolean {
    return pathname === CONTROL_PATH || pathname.startsWith(`${CONTROL_PATH}/`);
  }

  async answer(req: IncomingMessage, pathname: string): Promise<EmulatorResponse> {
    const refusal = this.refusal(req);
    if (refusal) return refusal;
    const path = pathname.slice(CONTROL_PATH.length);
    switch (path) {
      case '/integrations':
        if (req.method === 'POST') return this.addIntegration(req);
        if (req.method !== 'GET') return methodNotAllowed('GET, POST');
        return {
          status: 200,
          body: { integrations: this.sources.registry.entries().map((e) => summary(e.integration)) },
        };
      case '/faults':
        return req.method === 'POST' ? this.queueFaults(req) : methodNotAllowed('POST');
      case '/reset':
        return req.method === 'POST' ? this.reset() : methodNotAllowed('POST');
    }
    const match = /^\/integrations\/([^/]+)\/certificate$/.exec(path);
    if (!match) return failure(404, 'not_found', `no control at ${pathname}`);
    if (req.method !== 'PUT') return methodNotAllowed('PUT');
    let machineId: string;
    try {
      machineId = decodeURIComponent(match[1]);
    } catch {
      return failure(404, 'unknown_integration', 'the machineId in the path is not percent-encoded text');
    }
    return this.replaceCertificate(req, machineId);
  }

  private async addIntegration(req: IncomingMessage): Promise<EmulatorResponse> {
    const read = await readJsonObject(req, '{ "certificatePem": "…", "name": "…" }');
    if ('refused' in read) return read.refused;
    const { certificatePem, name } = read.value;
    if (typeof certificatePem !== 'string' || certificatePem.trim() === '') {
      return failure(400, 'invalid_request', 'certificatePem is missing: send { "certificatePem": "-----BEGIN …" }');
    }
    if (name !== undefined && (typeof name !== 'string' || name.trim() === '')) {
      return failure(400, 'invalid_request', 'name, when given, must be a non-empty string');
    }
    const { emulator, url } = this.sources;
    try {
      const integration = emulator.registerIntegration({ certificatePem, name });
      const body = { integration: { ...summary(integration), permissions: integration.permissions }, url };
      return { status: 201, body: { ...body, audience: emulator.audience } };
    } catch (error) {
      return failure(400, 'invalid_certificate', (error as Error).message);
    }
  }

  private async queueFaults(req: IncomingMessage): Promise<EmulatorResponse> {
    const read = await readJsonObject(req, '{ "target": "api", "fault": { "kind": "status", "status": 503 } }');
    if ('refused' in read) return read.refused;
    const request = faultRequest(read.value);
    if (typeof request === 'string') return failure(400, 'invalid_fault', request);
    const { faults } = this.sources;
    try {
      // The first copy is checked by the queue; the rest are the same value, so the request is queued whole or not.
      faults.push(request.fault, request.target);
    } catch (error) {
      return failure(400, 'invalid_fault', (error as Error).message);
    }
    for (let copy = 1; copy < request.times; copy++) faults.push(request.fault, request.target);
    return { status: 200, body: { pending: pendingCounts(faults) } };
  }

  private reset(): EmulatorResponse {
    const { faults, emulator } = this.sources;
    const cleared = pendingCounts(faults);
    faults.clear();
    emulator.resetCounters();
    return { status: 200, body: { cleared } };
  }

  private async replaceCertificate(req: IncomingMessage, machineId: string): Promise<EmulatorResponse> {
    const read = await readJsonObject(req, '{ "certificatePem": "…" }');
    if ('refused' in read) return read.refused;
    const { certificatePem } = read.value;
    if (typeof certificatePem !== 'string' || certificatePem.trim() === '') {
      return failure(400, 'invalid_request', 'certificatePem is missing: send { "certificatePem": "-----BEGIN …" }');
    }
    if (!this.sources.registry.has(machineId)) {
      return failure(404, 'unknown_integration', `no system integration with machineId '${machineId}' is registered`);
    }
    try {
      return {
        status: 200,
        body: { integration: summary(this.sources.emulator.replaceCertificate(machineId, certificatePem)) },
      };
    } catch (error) {
      return failure(400, 'invalid_certificate', (error as Error).message);
    }
  }

  /** Why this request may not use the controls, if it may not. */
  private refusal(req: IncomingMessage): EmulatorResponse | undefined {
    if (!fromLoopback(req)) return failure(403, 'forbidden', 'the controls answer only to clients on this machine');
    if (!this.hosts.has((req.headers.host ?? '').toLowerCase())) {
      return failure(421, 'misdirected', 'the controls answer only to the emulator host names on loopback');
    }
    if (req.headers.origin !== undefined || req.headers['sec-fetch-site'] !== undefined) {
      return failure(403, 'forbidden', 'the controls are not for browsers: use the inspector page');
    }
    return undefined;
  }
}

function summary(integration: RegisteredIntegration) {
  const { machineId, name, thumbprint, status } = integration;
  return { machineId, name, thumbprint, status };
}

function pendingCounts(faults: FaultQueues): Record<'token' | 'api', number> {
  const pending = faults.pending();
  return { token: pending.token.length, api: pending.api.length };
}

function methodNotAllowed(allow: string): EmulatorResponse {
  return { ...failure(405, 'method_not_allowed', `use ${allow}`), headers: { allow } };
}
