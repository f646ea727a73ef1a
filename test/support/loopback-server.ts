import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { afterEach } from 'vitest';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  url: string;
  authorization?: string;
  headers: IncomingHttpHeaders;
}

export interface LoopbackServer {
  url: string;
  origin: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/** A small purpose-built HTTP server on 127.0.0.1 that records what it receives. */
export async function startLoopbackServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}');
  },
): Promise<LoopbackServer> {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    requests.push({
      method: req.method ?? '',
      url: req.url ?? '',
      authorization: req.headers.authorization,
      headers: req.headers,
    });
    req.resume();
    req.on('end', () => handler(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    url: origin,
    origin,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/**
 * For a test file: `const server = useLoopbackServers()` at the top level gives a `server(handler?)` whose servers
 * (any number per test) are closed after each test.
 */
export function useLoopbackServers(): (
  handler?: (req: IncomingMessage, res: ServerResponse) => void,
) => Promise<LoopbackServer> {
  const open: LoopbackServer[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });
  return async (handler) => {
    const s = await startLoopbackServer(handler);
    open.push(s);
    return s;
  };
}
