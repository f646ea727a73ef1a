import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One message the platform answered, as the platform saw it. */
export interface ReceivedMessage {
  readonly status: number;
  readonly idempotencyKey?: string;
  /** The request body as sent (the model's messages say which tenant enqueued them). */
  readonly body: unknown;
  /** The integration the platform's answer names: the owner of the token the request carried (2xx only). */
  readonly machineId?: string;
}

export interface PlatformJournal {
  /** `http://127.0.0.1:PORT`: the tenants' base URL, in place of the platform's. */
  readonly url: string;
  /** Every `POST /api/messages` answered since the last `clear()`, in the order the answers came. */
  readonly messages: readonly ReceivedMessage[];
  clear(): void;
  close(): Promise<void>;
}

function json(buffer: Buffer): unknown {
  try {
    return JSON.parse(buffer.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * A pass-through proxy on loopback in front of the platform (the emulator) that writes down every message the
 * platform answered: what was sent, under which idempotency key, and whose token the platform found on it.
 */
export async function startPlatformJournal(target: string): Promise<PlatformJournal> {
  let messages: ReceivedMessage[] = [];
  const server: Server = createServer((req, res) => {
    const sent: Buffer[] = [];
    req.on('data', (chunk: Buffer) => sent.push(chunk));
    req.on('end', () => {
      const upstream = request(
        new URL(req.url ?? '/', target),
        { method: req.method, headers: { ...req.headers, host: new URL(target).host } },
        (answer) => {
          const answered: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => answered.push(chunk));
          answer.on('end', () => {
            const body = Buffer.concat(answered);
            if (req.method === 'POST' && req.url?.startsWith('/api/messages')) {
              const key = req.headers['idempotency-key'];
              const status = answer.statusCode ?? 0;
              const machineId = (json(body) as { machineId?: unknown } | undefined)?.machineId;
              messages.push({
                status,
                idempotencyKey: typeof key === 'string' ? key : undefined,
                body: json(Buffer.concat(sent)),
                machineId: typeof machineId === 'string' ? machineId : undefined,
              });
            }
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(body);
          });
        },
      );
      upstream.on('error', () => res.destroy());
      upstream.end(Buffer.concat(sent));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get messages() {
      return messages;
    },
    clear: () => {
      messages = [];
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
