import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the proxy holds: `arrived` once it is at the proxy, passed on to the target only after `release()`. */
export interface HeldRequest {
  readonly arrived: Promise<void>;
  release(): void;
}

export interface HoldingProxy {
  /** `http://127.0.0.1:PORT`: configure it as the base URL in place of the target's. */
  readonly url: string;
  /** Holds the next request that reaches the proxy; the ones after it pass straight through. */
  holdNext(): HeldRequest;
  /**
   * Passes the next request on at once and holds the target's answer: `arrived` once the target has answered (it
   * processed the request), the client gets the answer only after `release()`.
   */
  holdNextAnswer(): HeldRequest;
  /** The `Idempotency-Key` of each request that carried one, in the order they reached the proxy. */
  readonly keys: readonly string[];
  close(): Promise<void>;
}

/**
 * A pass-through HTTP proxy on loopback in front of `target` (the emulator), for tests that need a request to be in
 * flight while something else happens: the test holds it, does the other thing, and releases it. A gate the test
 * opens, where a delay would only make the overlap likely.
 */
function hold(queue: Array<{ arrive: () => void; released: Promise<void> }>): HeldRequest {
  let arrive!: () => void;
  let release!: () => void;
  const arrived = new Promise<void>((resolve) => (arrive = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  queue.push({ arrive, released });
  return { arrived, release };
}

export async function startHoldingProxy(target: string): Promise<HoldingProxy> {
  const holds: Array<{ arrive: () => void; released: Promise<void> }> = [];
  const answerHolds: Array<{ arrive: () => void; released: Promise<void> }> = [];
  const keys: string[] = [];
  const forward = (req: IncomingMessage, res: ServerResponse, answerHold = answerHolds.shift()): void => {
    const upstream = request(
      new URL(req.url ?? '/', target),
      { method: req.method, headers: { ...req.headers, host: new URL(target).host } },
      (answer) => {
        answer.pause();
        answerHold?.arrive();
        void (answerHold?.released ?? Promise.resolve()).then(() => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        });
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  };
  const server = createServer((req, res) => {
    const key = req.headers['idempotency-key'];
    if (typeof key === 'string') keys.push(key);
    const hold = holds.shift();
    if (!hold) return forward(req, res);
    req.pause();
    hold.arrive();
    void hold.released.then(() => forward(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    holdNext: () => hold(holds),
    holdNextAnswer: () => hold(answerHolds),
    keys,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
