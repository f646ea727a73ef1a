import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
import type { PlatformAuthOptions } from 'nestjs-platform-auth';
import type { FakeClock } from 'nestjs-platform-auth/testing';

const CHILD = fileURLToPath(new URL('../store/fleet-replica.child.mjs', import.meta.url));

export type CallOutcome =
  { ok: true; token: string } | { ok: false; reason?: string; status?: number; code?: string; message: string };

export interface LogLine {
  level: 'log' | 'warn' | 'error';
  message: string;
}

class Replica {
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>();

  private constructor(readonly child: ChildProcess) {
    child.on('message', (message: { id?: number; result?: unknown }) => {
      if (message.id === undefined) return;
      this.pending.get(message.id)?.resolve(message.result);
      this.pending.delete(message.id);
    });
    child.once('exit', () => {
      for (const { reject } of this.pending.values()) reject(new Error('replica process exited'));
      this.pending.clear();
    });
  }

  /** A new process, once it has loaded the package and is ready for `start`. */
  static async spawn(): Promise<Replica> {
    const child = fork(CHILD, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`replica process exited (${code}) while starting`)));
    });
    return new Replica(child);
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  request<T>(command: string, fields: Record<string, unknown> = {}): Promise<T> {
    const id = (this.nextId += 1);
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (result: unknown) => void, reject });
      this.child.send({ id, command, ...fields });
    });
  }

  /** Ends the process: `signal` at once, or SIGKILL if it has not exited after a grace period. */
  async end(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (!this.alive) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * Replica processes for the fleets of one test file. Starting Node and loading Nest is most of what a fleet costs, so
 * a process whose fleet closed is reused by the next fleet, with new module instances on a new clock.
 */
export class ReplicaProcesses {
  private readonly started = new Set<Replica>();
  private readonly idle: Replica[] = [];

  async take(count: number): Promise<Replica[]> {
    const reused = this.idle.splice(0, count).filter((replica) => replica.alive);
    const spawned = await Promise.all(Array.from({ length: count - reused.length }, () => Replica.spawn()));
    for (const replica of spawned) this.started.add(replica);
    return [...reused, ...spawned];
  }

  /** Back for the next fleet once its instances are closed; a process that does not manage that is ended. */
  async release(replica: Replica): Promise<void> {
    if (!replica.alive) return;
    const timer = setTimeout(() => void replica.end('SIGKILL'), 5_000);
    const stopped = await replica.request('stop').then(
      () => true,
      () => false,
    );
    clearTimeout(timer);
    if (stopped && replica.alive) this.idle.push(replica);
  }

  /** Ends every process, also those of a fleet that a failed test left open. */
  async close(): Promise<void> {
    this.idle.splice(0);
    await Promise.all([...this.started].map((replica) => replica.end()));
    this.started.clear();
  }
}

/** For a test file: `const processes = useReplicaProcesses()` at the top level; every process ends after the file. */
export function useReplicaProcesses(): ReplicaProcesses {
  const processes = new ReplicaProcesses();
  afterAll(() => processes.close());
  return processes;
}

/**
 * A fleet: `processes` child processes, each with `instances` module instances (each its own token cache, as
 * separate replicas), all pointed at one platform and one store. Every process gets a FakeClock starting at the
 * parent's clock's time; `advance()` moves all of them and the parent's together.
 */
export class Fleet {
  private constructor(
    readonly replicas: Replica[],
    private readonly clock: FakeClock,
    private readonly pool: ReplicaProcesses,
  ) {}

  static async start(options: {
    pool: ReplicaProcesses;
    processes: number;
    instances: number;
    clock: FakeClock;
    module: Partial<PlatformAuthOptions> & Record<string, unknown>;
  }): Promise<Fleet> {
    const replicas = await options.pool.take(options.processes);
    const fleet = new Fleet(replicas, options.clock, options.pool);
    await Promise.all(
      replicas.map((replica) =>
        replica.request('start', {
          startMs: options.clock.now(),
          instances: options.instances,
          // Fleets count exchanges from the first call; a fleet that tests the boot-time check asks for it.
          options: { startupCheck: 'off', ...options.module },
        }),
      ),
    );
    return fleet;
  }

  /** `getAccessToken()` on every instance of the given processes (default all) at once. */
  async getAll(processes: readonly number[] = this.replicas.map((_, i) => i)): Promise<CallOutcome[]> {
    const results = await Promise.all(processes.map((i) => this.replicas[i].request<CallOutcome[]>('get')));
    return results.flat();
  }

  async peekAll(): Promise<(string | null)[]> {
    return (await Promise.all(this.replicas.map((r) => r.request<(string | null)[]>('peek')))).flat();
  }

  async invalidate(process: number, token: string): Promise<boolean[]> {
    return this.replicas[process].request<boolean[]>('invalidate', { token });
  }

  async advance(ms: number): Promise<void> {
    this.clock.advance(ms);
    await Promise.all(this.live().map((r) => r.request('advance', { ms })));
  }

  /** Every log line each process captured since the last call. */
  async logs(): Promise<LogLine[]> {
    return (await Promise.all(this.live().map((r) => r.request<LogLine[]>('logs')))).flat();
  }

  kill(process: number): void {
    this.replicas[process].child.kill('SIGKILL');
  }

  /** Closes every instance; the processes go back to the pool for the next fleet. */
  async close(): Promise<void> {
    await Promise.all(this.replicas.map((replica) => this.pool.release(replica)));
  }

  private live(): Replica[] {
    return this.replicas.filter((replica) => replica.alive);
  }
}
