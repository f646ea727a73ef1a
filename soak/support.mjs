// What the soaks share: a free port, a redis-server, and a fault proxy in front of the platform emulator's API routes.
import { spawn } from 'node:child_process';
import { createServer, request } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { performance } from 'node:perf_hooks';

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * redis-server on a fixed port and directory. `appendOnly`: every command written to its append-only file (fsync on
 * every write) before it answers, so a restart keeps what it acknowledged.
 */
export async function launchRedis(port, dir, { appendOnly = false } = {}) {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir];
  const persistence = appendOnly ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
  const child = spawn('/usr/bin/redis-server', [...args, ...persistence]);
  await new Promise((resolve, reject) => {
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
      if (output.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready`)));
  });
  child.stdout.resume();
  child.stderr.resume();
  return child;
}

/**
 * In front of the platform: the token endpoint passes through untouched; an API request (`/api/…`) meets the next
 * queued one-shot fault, or the outage while it lasts, or passes through. A fault is `{ status, retryAfter? }`
 * (`retryAfter`: whole seconds, or a function giving the `Date` to send, read when the fault answers) or
 * `{ drop: 'before' }` (the connection reset before the platform saw the request) or `{ drop: 'after' }` (the
 * platform processed it, then the connection is reset instead of the answer reaching the client). It counts the
 * answers it made up by status, and the most API requests that arrived in any one second (faulted ones included);
 * `observe(req, body, reply, replyBody)` sees every API request the platform answered, with its answer.
 * `stripHeaders`: header names (lower case) taken off API requests before the platform sees them: a platform that
 * ignores `Idempotency-Key`, for one. `hold(ms)`: API requests arriving for `ms` reach the platform, and their answers
 * are held until the window ends (a client killed meanwhile never hears them).
 */
export async function startFaultProxy(target, { observe, stripHeaders = [] } = {}) {
  const faults = [];
  let outage;
  let holdUntil = 0;
  const answered = { drop: 0, held: 0 };
  const arrivals = [];
  let busiestSecond = 0;
  let busiestSinceTaken = 0;
  const answer = (res, fault) => {
    answered[fault.status] = (answered[fault.status] ?? 0) + 1;
    const headers = { 'content-type': 'application/json' };
    if (fault.retryAfter !== undefined) {
      const value = typeof fault.retryAfter === 'function' ? fault.retryAfter().toUTCString() : fault.retryAfter;
      headers['retry-after'] = String(value);
    }
    res.writeHead(fault.status, headers);
    res.end(JSON.stringify({ error: fault.status === 429 ? 'slow_down' : 'temporarily_unavailable' }));
  };
  const drop = (res) => {
    answered.drop += 1;
    res.socket?.resetAndDestroy();
  };
  const forward = (req, res, body, after) => {
    const headers = { ...req.headers, host: new URL(target).host };
    // Only API requests are read before forwarding (`after`); the token endpoint passes untouched.
    if (after) for (const name of stripHeaders) delete headers[name];
    const upstream = request(new URL(req.url, target), { method: req.method, headers }, (reply) => {
      if (!after) {
        res.writeHead(reply.statusCode, reply.headers);
        reply.pipe(res);
        return;
      }
      const chunks = [];
      reply.on('data', (chunk) => chunks.push(chunk));
      reply.on('end', () => after(reply, Buffer.concat(chunks)));
    });
    upstream.on('error', () => res.destroy());
    if (body === undefined) req.pipe(upstream);
    else upstream.end(body);
  };
  const server = createServer((req, res) => {
    if (!req.url.startsWith('/api/')) {
      forward(req, res, undefined);
      return;
    }
    const now = performance.now();
    arrivals.push(now);
    while (arrivals[0] <= now - 1_000) arrivals.shift();
    busiestSecond = Math.max(busiestSecond, arrivals.length);
    busiestSinceTaken = Math.max(busiestSinceTaken, arrivals.length);
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const fault = outage !== undefined && Date.now() < outage.until ? outage.fault : faults.shift();
      if (fault?.status !== undefined) return answer(res, fault);
      if (fault?.drop === 'before') return drop(res);
      const body = Buffer.concat(chunks);
      const heldFor = holdUntil - Date.now();
      forward(req, res, body, (reply, replyBody) => {
        observe?.(req, body, reply, replyBody);
        if (fault?.drop === 'after') return drop(res);
        const pass = () => {
          res.writeHead(reply.statusCode, reply.headers);
          res.end(replyBody);
        };
        if (heldFor <= 0) return pass();
        answered.held += 1;
        setTimeout(pass, heldFor);
      });
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    answered,
    /** The next `count` API requests meet `fault`, after the faults queued before it. */
    inject(fault, count = 1) {
      for (let i = 0; i < count; i += 1) faults.push(fault);
    },
    /** API requests arriving in the next `ms` are processed, and answered once the window ends. */
    hold(ms) {
      holdUntil = Date.now() + ms;
    },
    /** Every API request meets `fault` for `ms`. */
    outage(fault, ms) {
      outage = { fault, until: Date.now() + ms };
    },
    get pending() {
      return faults.length;
    },
    get busiestSecond() {
      return busiestSecond;
    },
    /** The busiest second since the last call. */
    takeBusiest() {
      const busiest = busiestSinceTaken;
      busiestSinceTaken = 0;
      return busiest;
    },
    close: () => server.close(),
  };
}
