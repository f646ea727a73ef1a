import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { afterAll, beforeAll } from 'vitest';

const REDIS_SERVER = '/usr/bin/redis-server';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * A real redis-server (the Debian package; `tools/ensure-services.mjs` installs it) on a free loopback port, in its
 * own temporary directory, with persistence off. Tests stop, freeze and restart it to see what the library does.
 */
export class RedisServer {
  private process?: ChildProcess;

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly args: readonly string[],
  ) {}

  /** `args`: more `redis-server` arguments (`--requirepass`, `--tls-port`, `--user`, …). */
  static async start(args: readonly string[] = []): Promise<RedisServer> {
    const server = new RedisServer(await freePort(), mkdtempSync(join(tmpdir(), 'platform-auth-redis-')), args);
    await server.launch();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
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

  /** Starts the server on its port again, empty. */
  async launch(): Promise<void> {
    const child = spawn(
      REDIS_SERVER,
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
        ...this.args,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.process = child;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const onData = (chunk: Buffer): void => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          child.stdout.off('data', onData);
          child.stdout.resume();
          resolve();
        }
      };
      child.stdout.on('data', onData);
      child.stderr.resume();
      child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready:\n${output}`)));
    });
  }

  /** Runs one command on a connection of its own (as the default user), for looking at what the library stored. */
  async command(...args: string[]): Promise<unknown> {
    const at = this.args.indexOf('--requirepass');
    const password = at === -1 ? undefined : this.args[at + 1];
    const client = createClient({ url: this.url, password });
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
export function useRedisServer(args: readonly string[] = []): () => RedisServer {
  let server: RedisServer | undefined;
  beforeAll(async () => {
    server = await RedisServer.start(args);
  });
  afterAll(async () => {
    await server?.stop();
  });
  return () => {
    if (!server) throw new Error('useRedisServer(): the server starts in beforeAll');
    return server;
  };
}
