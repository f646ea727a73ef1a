import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { reveal } from '../util/secret.util.js';
import { tlsOptions } from './redis-client.factory.js';
import type { RedisConnectionSettings } from './redis-connection.options.js';

/** A reply Redis would not send to the store's command; `code` names it for `status()` and the log line. */
export class UnexpectedReplyError extends Error {
  constructor(readonly code: 'UNEXPECTED_REPLY' | 'REPLY_TOO_LARGE') {
    super(code);
  }
}

/** An error Redis answered, by its first word (`WRONGPASS`, `NOPERM`): the rest may quote a key or an address. */
class RedisErrorReply extends Error {
  constructor(readonly code: string) {
    super(code);
  }
}

/** A short line (`$123`, `-NOPERM …`) that has not ended within this many bytes is not one Redis sends. */
const MAX_LINE_BYTES = 1_024;

/** What one reply was: a status (`+OK`), Redis's error, a bulk string or nil. */
type Reply =
  | { readonly kind: 'status' | 'bulk'; readonly value: string }
  | { readonly kind: 'nil' }
  | { readonly kind: 'error'; readonly error: RedisErrorReply };

interface Pending {
  /** The handshake expects a status, a read a bulk string or nil, of at most `maxBytes`. */
  readonly expects: 'status' | 'bulk';
  readonly maxBytes: number;
  resolve(value: string | null): void;
  reject(error: Error): void;
}

/**
 * Reads a standalone Redis's answers to the bounded read on a connection of its own, RESP parsed here: a bulk
 * string longer than `maxBytes` ends the connection as soon as its length is announced, so a hostile server (or
 * anyone on the path of a plain `redis://` connection) costs a replica a few bytes, where node-redis, which has no
 * bound on a reply, would buffer and decode all of it before the store could look at its length.
 */
export class BoundedReadConnection {
  /** The connection being opened, or open. */
  #connection?: Promise<Socket>;
  /** The connection the replies in `#received` and the reads in `#pending` belong to. */
  #current?: Socket;
  #pending: Pending[] = [];
  #received: Buffer = Buffer.alloc(0);
  #closed = false;

  constructor(
    private readonly settings: RedisConnectionSettings,
    private readonly connectTimeoutMs: number,
    private readonly answerTimeoutMs?: number,
  ) {}

  /** The answer to `args`: a bulk string, or `null`; any other reply, or one longer than `maxBytes`, rejects. */
  async read(args: readonly string[], maxBytes: number): Promise<string | null> {
    const socket = await this.connected();
    const answer = this.ask(socket, args, 'bulk', maxBytes);
    if (this.answerTimeoutMs === undefined) return answer;
    // A frozen server answers nothing: a new connection for the next read, as the node-redis channel does.
    const timer = setTimeout(() => this.fail(socket, new Error('no answer')), this.answerTimeoutMs).unref();
    return answer.finally(() => clearTimeout(timer));
  }

  close(): void {
    this.#closed = true;
    if (this.#current) this.fail(this.#current, new Error('the token store is closed'));
  }

  private ask(
    socket: Socket,
    args: readonly string[],
    expects: Pending['expects'],
    maxBytes = 0,
  ): Promise<string | null> {
    // Failed between being handed out and this command: nothing will answer on it.
    if (socket !== this.#current) return Promise.reject(new Error('connection closed'));
    return new Promise((resolve, reject) => {
      this.#pending.push({ expects, maxBytes, resolve, reject });
      socket.write(encodeCommand(args));
    });
  }

  private connected(): Promise<Socket> {
    if (this.#closed) return Promise.reject(new Error('the token store is closed'));
    if (!this.#connection) {
      const opening = this.open();
      this.#connection = opening;
      opening.catch(() => {
        if (this.#connection === opening) this.#connection = undefined;
      });
    }
    return this.#connection;
  }

  private async open(): Promise<Socket> {
    const { settings } = this;
    const node = settings.nodes[0];
    const tls = settings.tls && tlsOptions(settings.tls);
    const socket = tls
      ? tlsConnect({
          host: node.host,
          port: node.port,
          ...tls,
          ...(isIP(node.host) === 0 && { servername: node.host }),
        })
      : netConnect({ host: node.host, port: node.port });
    this.#current = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(socket, chunk));
    socket.on('error', (error: Error) => this.fail(socket, error));
    socket.on('close', () => this.fail(socket, new Error('connection closed')));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })),
          this.connectTimeoutMs,
        );
        socket.once(tls ? 'secureConnect' : 'connect', () => {
          clearTimeout(timer);
          resolve();
        });
        socket.once('close', () => {
          clearTimeout(timer);
          reject(new Error('connection closed'));
        });
        socket.once('error', (error: Error) => {
          clearTimeout(timer);
          reject(error);
        });
      });
      const handshake: Promise<unknown>[] = [];
      // As node-redis signs in and selects the database, so both connections see the same keys with the same rights.
      if (settings.username !== undefined || settings.password !== undefined) {
        const password = (settings.password && reveal(settings.password)) ?? '';
        const credentials = settings.username === undefined ? [password] : [settings.username, password];
        handshake.push(this.ask(socket, ['AUTH', ...credentials], 'status'));
      }
      if (settings.database !== undefined && settings.database !== 0) {
        handshake.push(this.ask(socket, ['SELECT', String(settings.database)], 'status'));
      }
      await Promise.all(handshake);
      if (this.#closed) throw new Error('the token store is closed');
    } catch (error) {
      this.fail(socket, error as Error);
      throw error;
    }
    return socket;
  }

  /** Parses what has arrived; a reply the read cannot have asked for ends the connection and every read on it. */
  private receive(socket: Socket, chunk: Buffer): void {
    if (socket !== this.#current) return;
    this.#received = this.#received.length === 0 ? chunk : Buffer.concat([this.#received, chunk]);
    for (;;) {
      const pending = this.#pending.at(0);
      const parsed = parseReply(this.#received, pending?.maxBytes ?? 0);
      if (parsed === undefined) return;
      if (parsed instanceof Error) return this.fail(socket, parsed);
      const { reply } = parsed;
      if (!pending || (reply.kind !== 'error' && expected(reply) !== pending.expects)) {
        return this.fail(socket, new UnexpectedReplyError('UNEXPECTED_REPLY'));
      }
      this.#received = this.#received.subarray(parsed.length);
      this.#pending.shift();
      if (reply.kind === 'error') pending.reject(reply.error);
      else pending.resolve(reply.kind === 'nil' ? null : reply.value);
    }
  }

  private fail(socket: Socket, error: Error): void {
    socket.destroy();
    if (socket !== this.#current) return;
    this.#current = undefined;
    this.#connection = undefined;
    this.#received = Buffer.alloc(0);
    const pending = this.#pending;
    this.#pending = [];
    for (const read of pending) read.reject(error);
  }
}

function expected(reply: Reply): Pending['expects'] {
  return reply.kind === 'status' ? 'status' : 'bulk';
}

/**
 * The first reply in `bytes` and how many bytes it took; `undefined` until it is complete; an `Error` when it is none
 * the store's commands get (an integer, an array, a bulk string over `maxBytes`), which is not read further.
 */
function parseReply(bytes: Buffer, maxBytes: number): { reply: Reply; length: number } | Error | undefined {
  const lineEnd = bytes.indexOf('\r\n');
  if (lineEnd === -1) return bytes.length > MAX_LINE_BYTES ? new UnexpectedReplyError('UNEXPECTED_REPLY') : undefined;
  const line = bytes.toString('latin1', 1, lineEnd);
  const length = lineEnd + 2;
  switch (String.fromCharCode(bytes[0])) {
    case '+':
      return { reply: { kind: 'status', value: line }, length };
    case '-':
      return {
        reply: { kind: 'error', error: new RedisErrorReply(/^[A-Z][A-Z_]{1,31}/.exec(line)?.[0] ?? 'ERR') },
        length,
      };
    case '$': {
      if (line === '-1') return { reply: { kind: 'nil' }, length };
      if (!/^\d{1,12}$/.test(line)) return new UnexpectedReplyError('UNEXPECTED_REPLY');
      const size = Number(line);
      if (size > maxBytes) return new UnexpectedReplyError('REPLY_TOO_LARGE');
      if (bytes.length < length + size + 2) return undefined;
      if (bytes.toString('latin1', length + size, length + size + 2) !== '\r\n') {
        return new UnexpectedReplyError('UNEXPECTED_REPLY');
      }
      return {
        reply: { kind: 'bulk', value: bytes.toString('utf8', length, length + size) },
        length: length + size + 2,
      };
    }
    default:
      return new UnexpectedReplyError('UNEXPECTED_REPLY');
  }
}

function encodeCommand(args: readonly string[]): Buffer {
  const parts = [`*${args.length}\r\n`];
  for (const arg of args) parts.push(`$${Buffer.byteLength(arg)}\r\n${arg}\r\n`);
  return Buffer.from(parts.join(''));
}
