import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { freePort } from './redis-server.js';

/** Debian's postgresql package puts each major version's binaries here; the newest installed one is used. */
const VERSIONS_DIR = '/usr/lib/postgresql';

function binaries(): string {
  const versions = existsSync(VERSIONS_DIR)
    ? readdirSync(VERSIONS_DIR)
        .filter((name) => existsSync(join(VERSIONS_DIR, name, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0)
    throw new Error(`no PostgreSQL under ${VERSIONS_DIR}: run node tools/ensure-services.mjs postgresql`);
  return join(VERSIONS_DIR, versions[0], 'bin');
}

/**
 * PostgreSQL refuses to run as root: as root (the tests' user here), its files and processes belong to the
 * `postgres` user the Debian package creates; as anyone else, to that user.
 */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string): number => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * A real PostgreSQL server (Debian's `postgresql`; `tools/ensure-services.mjs` installs it) for one test file: a
 * cluster of its own made by `initdb` in a temporary folder, listening on a free loopback port and on a socket in
 * that folder, trusting local connections. Tests kill it (`SIGKILL` of the postmaster and its backends, as a crash
 * does) and launch it again on the same data to see what the outbox does; `stop()` removes everything.
 */
export class PostgresServer {
  private process?: ChildProcess;

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly bin: string,
    private readonly user: { uid: number; gid: number } | undefined,
  ) {}

  static async start(): Promise<PostgresServer> {
    const bin = binaries();
    const user = serverUser();
    const dir = mkdtempSync(join(tmpdir(), 'platform-auth-postgres-'));
    mkdirSync(join(dir, 'socket'));
    if (user) for (const path of [dir, join(dir, 'socket')]) chownSync(path, user.uid, user.gid);
    execFileSync(
      join(bin, 'initdb'),
      ['-D', join(dir, 'data'), '--auth=trust', '--username=postgres', '--encoding=UTF8', '--locale=C.UTF-8'],
      { stdio: 'pipe', ...user, env: { ...process.env, LC_ALL: 'C.UTF-8' } },
    );
    // The free port is closed again before postgres binds it: another test's server may be given it meanwhile.
    for (let attempt = 1; ; attempt++) {
      const server = new PostgresServer(await freePort(), dir, bin, user);
      try {
        await server.launch();
        return server;
      } catch (error) {
        if (attempt === 5 || !/could not bind|Address already in use/.test((error as Error).message)) throw error;
      }
    }
  }

  /** A connection string for node-postgres and the libraries on top of it. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  get running(): boolean {
    return this.process !== undefined;
  }

  /** Starts the server on its data folder and port again, after `kill()`: what was committed is there. */
  async launch(): Promise<void> {
    const child = spawn(
      join(this.bin, 'postgres'),
      [
        '-D',
        join(this.dir, 'data'),
        '-p',
        String(this.port),
        '-k',
        join(this.dir, 'socket'),
        '-c',
        'listen_addresses=127.0.0.1',
        // A killed server loses nothing it committed to the page cache; only a crash of the machine would.
        '-c',
        'fsync=off',
        '-c',
        'max_connections=200',
      ],
      // A process group of its own, so `kill()` reaches the backends as well as the postmaster.
      { stdio: ['ignore', 'ignore', 'pipe'], detached: true, ...this.user },
    );
    this.process = child;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const onData = (chunk: Buffer): void => {
        output += chunk.toString();
        if (/database system is ready to accept connections/.test(output)) {
          child.stderr.off('data', onData);
          child.stderr.resume();
          resolve();
        }
      };
      child.stderr.on('data', onData);
      child.once('exit', (code) => {
        this.process = undefined;
        reject(new Error(`postgres exited (${code}) before it was ready:\n${output}`));
      });
      // A missing binary: fail the file at once rather than leave its set-up waiting for the hook timeout.
      child.once('error', (error) => reject(new Error(`postgres did not start: ${error.message}`)));
    });
  }

  /** Kills the postmaster and every backend (`SIGKILL`): connections reset, new ones refused, until `launch()`. */
  async kill(): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    this.process = undefined;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-child.pid!, 'SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One PostgreSQL server for a test file, started before its tests and stopped after them. */
export function usePostgresServer(): () => PostgresServer {
  let server: PostgresServer | undefined;
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(async () => {
    await server?.stop();
  });
  return () => {
    if (!server) throw new Error('usePostgresServer(): the server starts in beforeAll');
    return server;
  };
}
