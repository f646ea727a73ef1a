import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisClient } from 'redis';
import { afterAll, beforeAll } from 'vitest';

const REDIS_SERVER = '/usr/bin/redis-server';

/**
 * The client class `command()` connects with. node-redis builds one per configuration (port and password included)
 * and keeps only the last it built, so a `createClient` per command, one server's port after another's, cost 60–70 ms
 * of CPU each: seconds in a file that polls a sentinel and its replica. Built once here, without the modules
 * `redis` adds (a raw `sendCommand` needs none); each command still has a connection of its own.
 */
const newClient = RedisClient.factory();

/**
 * Polls `check` every 50 ms until it holds. The minute is a hang guard, not an expectation of speed; usable in hooks
 * (where `expect.poll` is not).
 */
export async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const guard = performance.now() + 60_000;
  while (!(await check().catch(() => false))) {
    if (performance.now() > guard) throw new Error(`gave up waiting: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** TLS files of a server that listens on TLS only, and those `command()` connects with. */
export interface RedisServerTls {
  readonly caPath: string;
  readonly serverCertPath: string;
  readonly serverKeyPath: string;
  /** Require a client certificate signed by the CA (mutual TLS). */
  readonly mutual?: boolean;
  readonly clientCertPath?: string;
  readonly clientKeyPath?: string;
}

export interface RedisServerOptions {
  /** More `redis-server` arguments (`--requirepass`, `--user`, `--cluster-enabled`, …). */
  readonly args?: readonly string[];
  /** Listen on TLS only, on the server's port. */
  readonly tls?: RedisServerTls;
  /** A sentinel instead of a server, with this configuration (the port and bind lines are added). */
  readonly sentinelConfig?: string;
  /** Password of the default user, for `command()`. */
  readonly password?: string;
}

/**
 * A real redis-server (the Debian package; `tools/ensure-services.mjs` installs it) on a free loopback port, in its
 * own temporary directory, with persistence off: plain, TLS-only, a cluster node or a sentinel. Tests stop, freeze
 * and restart it to see what the library does; a restarted node keeps its directory (a cluster node its nodes.conf).
 */
export class RedisServer {
  private process?: ChildProcess;
  /** How long the last `launch()` took until the server said it was ready. */
  launchMs = 0;

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly options: RedisServerOptions,
  ) {}

  /** `options`: more arguments as a list, or the whole set of options. */
  static async start(options: readonly string[] | RedisServerOptions = {}): Promise<RedisServer> {
    const resolved = Array.isArray(options) ? { args: options } : (options as RedisServerOptions);
    const dir = mkdtempSync(join(tmpdir(), 'platform-auth-redis-'));
    // The free port is closed again before redis-server binds it: another test's server may be given it meanwhile.
    for (let attempt = 1; ; attempt++) {
      const server = new RedisServer(await freePort(), dir, resolved);
      try {
        await server.launch();
        return server;
      } catch (error) {
        if (attempt === 5 || !/Address already in use/.test((error as Error).message)) throw error;
      }
    }
  }

  get url(): string {
    return `${this.options.tls ? 'rediss' : 'redis'}://127.0.0.1:${this.port}`;
  }

  /** `host:port`, as a sentinel list or `redis-cli --cluster create` names it. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.process !== undefined;
  }

  /** Freezes the server (`SIGSTOP`): connections stay open and nothing answers, the worst case for a client. */
  pause(): void {
    this.process?.kill('SIGSTOP');
  }

  resume(): void {
    this.process?.kill('SIGCONT');
  }

  /** Kills the server (`SIGKILL`): connections are reset and new ones refused, until `launch()`. */
  async kill(): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    this.process = undefined;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await exited;
  }

  /** Starts the server on its port again (a plain server empty; a cluster node or sentinel with its own files). */
  async launch(): Promise<void> {
    const startedAt = performance.now();
    const child = spawn(REDIS_SERVER, this.arguments(), { stdio: ['ignore', 'pipe', 'pipe'] });
    this.process = child;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const onData = (chunk: Buffer): void => {
        output += chunk.toString();
        if (/Ready to accept connections|Sentinel ID is/.test(output)) {
          child.stdout.off('data', onData);
          child.stdout.resume();
          resolve();
        }
      };
      child.stdout.on('data', onData);
      child.stderr.resume();
      child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready:\n${output}`)));
      // A missing binary: fail the file at once rather than leave its set-up waiting for the hook timeout.
      child.once('error', (error) => reject(new Error(`redis-server did not start: ${error.message}`)));
    });
    this.launchMs = performance.now() - startedAt;
  }

  private arguments(): string[] {
    const { args = [], tls, sentinelConfig } = this.options;
    if (sentinelConfig !== undefined) {
      const file = join(this.dir, 'sentinel.conf');
      // A sentinel rewrites its file (what it learnt of the replicas and the other sentinels): write it only once.
      try {
        readFileSync(file);
      } catch {
        writeFileSync(file, `port ${this.port}\nbind 127.0.0.1\ndir ${this.dir}\n${sentinelConfig}\n`);
      }
      return [file, '--sentinel', ...args];
    }
    const listen = tls
      ? [
          '--port',
          '0',
          '--tls-port',
          String(this.port),
          '--tls-cert-file',
          tls.serverCertPath,
          '--tls-key-file',
          tls.serverKeyPath,
          '--tls-ca-cert-file',
          tls.caPath,
          '--tls-auth-clients',
          tls.mutual ? 'yes' : 'no',
        ]
      : ['--port', String(this.port)];
    return [...listen, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, ...args];
  }

  /** Runs one command on a connection of its own (as the default user), for looking at what the library stored. */
  async command(...args: string[]): Promise<unknown> {
    const { tls, password } = this.options;
    const client = newClient({
      socket: {
        host: '127.0.0.1',
        port: this.port,
        reconnectStrategy: false,
        ...(tls && {
          tls: true as const,
          ca: readFileSync(tls.caPath),
          ...(tls.clientCertPath && { cert: readFileSync(tls.clientCertPath) }),
          ...(tls.clientKeyPath && { key: readFileSync(tls.clientKeyPath) }),
        }),
      },
      password,
    });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return await client.sendCommand(args);
    } finally {
      client.destroy();
    }
  }

  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One redis-server for a test file, started before its tests and stopped after them. */
export function useRedisServer(options: readonly string[] | RedisServerOptions = []): () => RedisServer {
  let server: RedisServer | undefined;
  beforeAll(async () => {
    server = await RedisServer.start(options);
  });
  afterAll(async () => {
    await server?.stop();
  });
  return () => {
    if (!server) throw new Error('useRedisServer(): the server starts in beforeAll');
    return server;
  };
}
