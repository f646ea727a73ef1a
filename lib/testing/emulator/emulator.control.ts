import type { IncomingMessage } from 'node:http';
import { emulatorHostNames, fromLoopback, parseMediaType, readBody, type EmulatorResponse } from './emulator.http.js';
import type { IntegrationRegistry } from './emulator.registry.js';
import type { RegisteredIntegration } from './emulator.types.js';

export const CONTROL_PATH = '/_emulator/control';

/** A PEM certificate is about 1.5 KB; the JSON around it adds little. */
const MAX_CONTROL_BODY_BYTES = 16 * 1024;

export interface ControlSources {
  readonly url: string;
  readonly registry: IntegrationRegistry;
  replaceCertificate(machineId: string, certificatePem: string): RegisteredIntegration;
}

/**
 * `/_emulator/control/`: the portal's actions for programs on this machine (`platform-auth emulator upload`), as
 * JSON. Only for clients on loopback that name the emulator in `Host`, and never for a browser: a request carrying
 * `Origin` or `Sec-Fetch-Site` is refused, and a JSON body or a PUT from another site needs a CORS preflight this
 * endpoint never grants.
 *
 * - `GET  /_emulator/control/integrations`: `{ integrations: [{ machineId, name, thumbprint, status }] }`
 * - `PUT  /_emulator/control/integrations/{machineId}/certificate` with `{ certificatePem }`: replaces the
 *   integration's certificate, as the portal's upload does; `{ integration }` on success, else
 *   `{ error, message }` (400 a malformed or non-RSA certificate, 404 no such integration).
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
    if (path === '/integrations') {
      if (req.method !== 'GET') return methodNotAllowed('GET');
      return {
        status: 200,
        body: { integrations: this.sources.registry.entries().map((e) => summary(e.integration)) },
      };
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

  private async replaceCertificate(req: IncomingMessage, machineId: string): Promise<EmulatorResponse> {
    const read = await readBody(req, MAX_CONTROL_BODY_BYTES);
    if (read.tooLarge) {
      return {
        ...failure(413, 'too_large', `the body is over ${MAX_CONTROL_BODY_BYTES} bytes`),
        closeConnection: true,
      };
    }
    if (parseMediaType(req.headers['content-type'])?.type !== 'application/json') {
      return failure(415, 'unsupported_media_type', 'send { "certificatePem": "…" } as application/json');
    }
    let certificatePem: unknown;
    try {
      certificatePem = (JSON.parse(read.body.toString('utf8')) as { certificatePem?: unknown })?.certificatePem;
    } catch {
      return failure(400, 'invalid_request', 'the body is not JSON');
    }
    if (typeof certificatePem !== 'string' || certificatePem.trim() === '') {
      return failure(400, 'invalid_request', 'certificatePem is missing: send { "certificatePem": "-----BEGIN …" }');
    }
    if (!this.sources.registry.has(machineId)) {
      return failure(404, 'unknown_integration', `no system integration with machineId '${machineId}' is registered`);
    }
    try {
      return {
        status: 200,
        body: { integration: summary(this.sources.replaceCertificate(machineId, certificatePem)) },
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

function failure(status: number, error: string, message: string): EmulatorResponse {
  return { status, body: { error, message } };
}

function methodNotAllowed(allow: string): EmulatorResponse {
  return { ...failure(405, 'method_not_allowed', `use ${allow}`), headers: { allow } };
}
