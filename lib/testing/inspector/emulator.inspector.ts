import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  emulatorHostNames,
  parseMediaType,
  readBody,
  writeResponse,
  type EmulatorResponse,
} from '../emulator/emulator.http.js';
import { INSPECTOR_CSS, INSPECTOR_ICON, INSPECTOR_JS } from './inspector.assets.js';
import { takeSnapshot, type InspectorSources } from './inspector.model.js';
import { INSPECTOR_PATH, renderPage, type PageState } from './inspector.view.js';
import type { EmulatorFault, FaultTarget, IntegrationPermission } from '../emulator/emulator.types.js';

/** Only the emulator's own stylesheet, script and icon; no inline code, no frames, forms post only back here. */
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const SECURITY_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // Not no-referrer: with it Chromium sends `Origin: null` on the page's own form posts.
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'cache-control': 'no-store',
} as const;

const ASSETS: Readonly<Record<string, { type: string; body: string }>> = {
  '/inspector.css': { type: 'text/css; charset=utf-8', body: INSPECTOR_CSS },
  '/inspector.js': { type: 'text/javascript; charset=utf-8', body: INSPECTOR_JS },
  '/favicon.svg': { type: 'image/svg+xml', body: INSPECTOR_ICON },
};

type Action = (form: URLSearchParams) => string;

/**
 * `/_emulator/`: a page that shows the emulator's state and every exchange with a verdict per rule, with forms to
 * change it. State-changing requests are POST forms that must carry this emulator's random CSRF token and, when
 * the browser sends them, an Origin and a Host naming the emulator (which also defeats DNS rebinding); each is
 * answered with a redirect back to the page (POST-redirect-GET).
 */
export class EmulatorInspector {
  private readonly csrfToken = randomBytes(32).toString('base64url');
  private readonly hosts: ReadonlySet<string>;
  private notice: PageState['notice'];
  private readonly actions: Readonly<Record<string, Action>>;

  constructor(private readonly sources: InspectorSources) {
    this.hosts = emulatorHostNames(sources.emulator.url);
    const { emulator } = sources;
    this.actions = {
      status: (form) => {
        const machineId = required(form, 'machineId');
        emulator.setIntegrationStatus(machineId, required(form, 'status'));
        return `integration ${machineId} is now ${form.get('status')}`;
      },
      permissions: (form) => {
        const machineId = required(form, 'machineId');
        const permissions = form.getAll('permission') as IntegrationPermission[];
        emulator.setPermissions(machineId, permissions);
        return `integration ${machineId} now holds ${permissions.length > 0 ? permissions.join(', ') : 'no permission'}`;
      },
      certificate: (form) => {
        const machineId = required(form, 'machineId');
        const { thumbprint } = emulator.replaceCertificate(machineId, required(form, 'certificatePem'));
        return `integration ${machineId} now holds the certificate with thumbprint ${thumbprint}; the previous one is refused`;
      },
      revoke: (form) => {
        const id = form.get('token');
        if (id === null) return `${emulator.revokeAllTokens()} usable token(s) revoked`;
        return this.sources.tokens.revokeById(id) ? `token ${id} revoked` : `token ${id} was not usable`;
      },
      fault: (form) => {
        const target = (form.get('target') ?? 'token') as FaultTarget;
        const fault = faultFrom(form);
        emulator.injectFault(fault, target);
        return `fault ${fault.kind} queued for the next request to ${target === 'token' ? 'the token endpoint' : 'the API'}`;
      },
      clock: (form) => {
        const seconds = Number(required(form, 'offsetSeconds'));
        emulator.setClockOffset(seconds * 1000);
        return `clock offset set to ${seconds} s`;
      },
    };
  }

  static serves(pathname: string): boolean {
    return pathname === INSPECTOR_PATH || pathname.startsWith(`${INSPECTOR_PATH}/`);
  }

  get url(): string {
    return `${this.sources.emulator.url}${INSPECTOR_PATH}/`;
  }

  async handle(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> {
    const now = this.sources.now();
    const respond = (response: EmulatorResponse) =>
      writeResponse(res, now, { ...response, headers: { ...SECURITY_HEADERS, ...response.headers } });
    const path = pathname.slice(INSPECTOR_PATH.length);
    if (!this.hosts.has((req.headers.host ?? '').toLowerCase())) {
      return respond(text(421, 'the inspector answers only to the emulator host names on loopback'));
    }
    if (req.method === 'POST' && path.startsWith('/actions/')) return respond(await this.act(req, path.slice(9)));
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return respond({ ...text(405, 'method not allowed'), headers: { allow: 'GET, HEAD' } });
    }
    if (path === '') return respond({ status: 308, headers: { location: `${INSPECTOR_PATH}/` } });
    if (path === '/') {
      const page = renderPage(takeSnapshot(this.sources), { csrfToken: this.csrfToken, notice: this.notice });
      return respond({ status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: page });
    }
    if (path === '/journal.json') return respond({ status: 200, body: takeSnapshot(this.sources) });
    const asset = Object.hasOwn(ASSETS, path) ? ASSETS[path] : undefined;
    if (asset) return respond({ status: 200, headers: { 'content-type': asset.type }, body: asset.body });
    return respond(text(404, 'not found'));
  }

  private async act(req: IncomingMessage, name: string): Promise<EmulatorResponse> {
    const bodyRead = await readBody(req);
    if (bodyRead.tooLarge) return { ...text(413, 'form too large'), closeConnection: true };
    const refusal = this.forgeryCheck(req);
    if (refusal) return text(403, refusal);
    if (parseMediaType(req.headers['content-type'])?.type !== 'application/x-www-form-urlencoded') {
      return text(415, 'actions take application/x-www-form-urlencoded forms');
    }
    const form = new URLSearchParams(bodyRead.body.toString('utf8'));
    if (!this.validCsrfToken(form.get('csrf'))) return text(403, 'missing or wrong CSRF token: reload the page');
    const action = Object.hasOwn(this.actions, name) ? this.actions[name] : undefined;
    if (!action) return text(404, `no action '${name}'`);
    try {
      this.notice = { ok: true, text: action(form) };
    } catch (error) {
      this.notice = { ok: false, text: `${name} failed: ${error instanceof Error ? error.message : String(error)}` };
    }
    return { status: 303, headers: { location: `${INSPECTOR_PATH}/#${ANCHORS[name] ?? ''}` } };
  }

  /** Why a POST cannot have come from the page itself, if it cannot. */
  private forgeryCheck(req: IncomingMessage): string | undefined {
    const origin = req.headers.origin;
    if (origin !== undefined && !(origin.startsWith('http://') && this.hosts.has(origin.slice(7).toLowerCase()))) {
      return `Origin ${origin} is not this emulator`;
    }
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') return `a ${site} request cannot change it`;
    return undefined;
  }

  private validCsrfToken(candidate: string | null): boolean {
    const expected = Buffer.from(this.csrfToken);
    const given = Buffer.from(candidate ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}

const ANCHORS: Readonly<Record<string, string>> = {
  status: 'integrations',
  permissions: 'integrations',
  certificate: 'integrations',
  revoke: 'tokens',
  fault: 'faults',
  clock: 'clock',
};

function text(status: number, message: string): EmulatorResponse {
  return { status, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: `${message}\n` };
}

function required(form: URLSearchParams, name: string): string {
  const value = form.get(name);
  if (value === null || value.trim() === '') throw new Error(`${name} is missing`);
  return value;
}

/** The fault the form describes; the emulator's `injectFault` checks it like any other. */
function faultFrom(form: URLSearchParams): EmulatorFault {
  const kind = required(form, 'kind');
  switch (kind) {
    case 'status': {
      const retryAfter = form.get('retryAfter')?.trim();
      return {
        kind,
        status: Number(required(form, 'status')),
        ...(retryAfter ? { headers: { 'Retry-After': retryAfter } } : {}),
      };
    }
    case 'delay':
      return { kind, ms: Number(required(form, 'ms')) };
    default:
      return { kind } as EmulatorFault;
  }
}
