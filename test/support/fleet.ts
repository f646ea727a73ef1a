import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
import type { PlatformAuthOptions } from 'nestjs-platform-auth';
import type { FakeClock } from 'nestjs-platform-auth/testing';
import { ChildReplica } from './child-replica.js';

const CHILD = fileURLToPath(new URL('../store/fleet-replica.child.mjs', import.meta.url));

export type CallOutcome =
  { ok: true; token: string } | { ok: false; reason?: string; status?: number; code?: string; message: string };

export interface LogLine {
  level: 'log' | 'warn' | 'error';
  message: string;
}

/**
 * Replica processes for fleets. Starting Node and loading Nest is most of what a fleet costs (over a second of CPU a
 * process), so a process whose fleet closed is reused by the next fleet, with new module instances on a new clock.
 */
export class ReplicaProcesses {
  private readonly started = new Set<ChildReplica>();
  private readonly idle: ChildReplica[] = [];

  async take(count: number): Promise<ChildReplica[]> {
    const taken = this.idle.splice(0, count);
    for (const replica of taken) if (!replica.alive) this.started.delete(replica);
    const reused = taken.filter((replica) => replica.alive);
    for (const replica of reused) replica.hold(true);
    const spawned = await Promise.all(Array.from({ length: count - reused.length }, () => ChildReplica.spawn(CHILD)));
    for (const replica of spawned) this.started.add(replica);
    return [...reused, ...spawned];
  }

  /** Back for the next fleet once its instances are closed; a process that does not manage that is ended. */
  async release(replica: ChildReplica): Promise<void> {
    if (!replica.alive) return;
    const timer = setTimeout(() => void replica.end('SIGKILL'), 5_000);
    const stopped = await replica.ask('stop').then(
      () => true,
      () => false,
    );
    clearTimeout(timer);
    if (!stopped || !replica.alive) return;
    // An idle process must not keep the test worker alive: the worker's exit ends it (it exits on disconnect).
    replica.hold(false);
    this.idle.push(replica);
  }

  /** Ends the processes still in a fleet (one a failed test left open); idle ones wait for the next fleet. */
  async endBusy(): Promise<void> {
    const busy = [...this.started].filter((replica) => !this.idle.includes(replica));
    await Promise.all(busy.map((replica) => replica.end()));
    for (const replica of busy) this.started.delete(replica);
  }
}

/**
 * One pool per worker process: the files of a worker share their module graph (`isolate: false`), so the next file's
 * fleets reuse the processes of the last one's. A file that runs alone ends its worker, and so its idle processes.
 */
const workerProcesses = new ReplicaProcesses();

/**
 * For a test file: `const processes = useReplicaProcesses()` at the top level. After the file, any process a failed
 * test left in a fleet is ended; the others stay for the worker's next file.
 */
export function useReplicaProcesses(): ReplicaProcesses {
  afterAll(() => workerProcesses.endBusy());
  return workerProcesses;
}

/**
 * A fleet: `processes` child processes, each with `instances` module instances (each its own token cache, as
 * separate replicas), all pointed at one platform and one store. Every process gets a FakeClock starting at the
 * parent's clock's time; `advance()` moves all of them and the parent's together.
 */
export class Fleet {
  private constructor(
    readonly replicas: ChildReplica[],
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
        replica.ask('start', {
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
    const results = await Promise.all(processes.map((i) => this.replicas[i].ask<CallOutcome[]>('get')));
    return results.flat();
  }

  async peekAll(): Promise<(string | null)[]> {
    return (await Promise.all(this.replicas.map((r) => r.ask<(string | null)[]>('peek')))).flat();
  }

  async invalidate(process: number, token: string): Promise<boolean[]> {
    return this.replicas[process].ask<boolean[]>('invalidate', { token });
  }

  async advance(ms: number): Promise<void> {
    this.clock.advance(ms);
    await Promise.all(this.live().map((r) => r.ask('advance', { ms })));
  }

  /** Every log line each process captured since the last call. */
  async logs(): Promise<LogLine[]> {
    return (await Promise.all(this.live().map((r) => r.ask<LogLine[]>('logs')))).flat();
  }

  kill(process: number): void {
    this.replicas[process].child.kill('SIGKILL');
  }

  /** Closes every instance; the processes go back to the pool for the next fleet. */
  async close(): Promise<void> {
    await Promise.all(this.replicas.map((replica) => this.pool.release(replica)));
  }

  private live(): ChildReplica[] {
    return this.replicas.filter((replica) => replica.alive);
  }
}
