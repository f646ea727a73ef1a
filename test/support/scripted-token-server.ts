import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ScriptedReply = (res: ServerResponse, req: IncomingMessage) => void;

export interface ScriptedTokenServer {
  url: string;
  /** Assertions received, in order (the `token` form field). */
  assertions: string[];
  /** Every form received, in order (user grants: code, code_verifier, refresh_token). */
  forms: URLSearchParams[];
  /** Access tokens this server issued, for leak checks. */
  issued: string[];
  requests: number;
  /** Most token requests ever open at the same time. */
  maxConcurrent: number;
  /** Replies to use, one per request, in order; when empty, `fallback` answers. */
  replies: ScriptedReply[];
  fallback: ScriptedReply;
  close(): Promise<void>;
}

/** A 200 token response with a fresh opaque token (recorded in `server.issued`). */
export function tokenReply(
  server: Pick<ScriptedTokenServer, 'issued'>,
  fields: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): ScriptedReply {
  return (res) => {
    const accessToken = `scripted-access-token-${randomUUID()}`;
    server.issued.push(accessToken);
    json(res, 200, { access_token: accessToken, token_type: 'Bearer', expires_in: 600, ...fields }, headers);
  };
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(body));
}

export function raw(status: number, body: string, headers: Record<string, string> = {}): ScriptedReply {
  return (res) => res.writeHead(status, headers).end(body);
}

/** A purpose-built token endpoint on 127.0.0.1 whose every answer the test scripts. */
export async function startScriptedTokenServer(): Promise<ScriptedTokenServer> {
  let open = 0;
  const state: ScriptedTokenServer = {
    url: '',
    assertions: [],
    forms: [],
    issued: [],
    requests: 0,
    maxConcurrent: 0,
    replies: [],
    fallback: () => undefined,
    close: async () => undefined,
  };
  state.fallback = tokenReply(state);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    open += 1;
    state.maxConcurrent = Math.max(state.maxConcurrent, open);
    res.on('close', () => {
      open -= 1;
    });
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      state.requests += 1;
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      state.forms.push(form);
      const token = form.get('token');
      if (token) state.assertions.push(token);
      (state.replies.shift() ?? state.fallback)(res, req);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
