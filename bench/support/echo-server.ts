import { fork } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

const BODY = Buffer.from('{"ok":true}');

/**
 * Answers every request 200 with a tiny JSON body once the request body is read: the cheapest honest server.
 * `reportAuthorization`: each answer says in `X-Authorized` (`yes`/`no`) whether the request carried a bearer token.
 */
export function createEchoServer(options: { reportAuthorization?: boolean } = {}): Server {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const headers: Record<string, string | number> = {
        'Content-Type': 'application/json',
        'Content-Length': BODY.length,
      };
      if (options.reportAuthorization)
        headers['X-Authorized'] = req.headers.authorization?.startsWith('Bearer ') ? 'yes' : 'no';
      res.writeHead(200, headers);
      res.end(BODY);
    });
  });
  // Blocks are separated by forced GCs; a socket idle for a moment must not be closed under a client that reuses it.
  server.keepAliveTimeout = 60_000;
  return server;
}

export function listen(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

export interface RunningServer {
  readonly url: string;
  close(): Promise<void>;
}

export async function startEchoServerInProcess(): Promise<RunningServer> {
  const server = createEchoServer();
  const url = await listen(server);
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * In a child process, so the server's work runs neither on the client's event loop nor in its CPU accounting: the
 * client's own cost can then be read from `process.cpuUsage()`, which outside load does not inflate the way it
 * inflates latency.
 */
export async function startEchoServerInChild(options: { reportAuthorization?: boolean } = {}): Promise<RunningServer> {
  const child = fork(fileURLToPath(new URL('./echo-server.child.js', import.meta.url)), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ECHO_REPORT_AUTHORIZATION: options.reportAuthorization ? '1' : '' },
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (message) => resolve(typeof message === 'string' ? message : JSON.stringify(message)));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`echo server exited early (${String(code)})`)));
  });
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill();
      }),
  };
}
