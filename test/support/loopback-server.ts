import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { afterEach } from 'vitest';
import { connect, type AddressInfo } from 'node:net';

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

/**
 * Ports below the ephemeral range (32768–60999 here): no `listen(0)` of any test is given one, and no client socket
 * is bound to one, so a connection to one is refused for the whole run. A port taken with `listen(0)` and closed
 * again is not: another test's server may be given it a moment later, or a client's own socket (a self-connect), and
 * a request sent there waits for an answer that never comes (undici's default is 300 s). None is on fetch's list of
 * bad ports, which `fetch` refuses before it connects.
 */
const REFUSING_CANDIDATES = [47, 61, 97, 787, 911, 1013, 1021];
let refusing: Promise<number> | undefined;

function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

/** A port on 127.0.0.1 that refuses every connection while the tests run (checked once per process). */
export function refusedPort(): Promise<number> {
  refusing ??= (async () => {
    for (const port of REFUSING_CANDIDATES) if (await refuses(port)) return port;
    throw new Error(`every one of ports ${REFUSING_CANDIDATES.join(', ')} on 127.0.0.1 accepted a connection`);
  })();
  return refusing;
}

/** `http://127.0.0.1:<port>` where nothing answers: every connection is refused. */
export async function refusedOrigin(): Promise<string> {
  return `http://127.0.0.1:${await refusedPort()}`;
}
