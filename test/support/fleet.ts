import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
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

  constructor(readonly child: ChildProcess) {
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

  request<T>(command: string, fields: Record<string, unknown> = {}): Promise<T> {
    const id = (this.nextId += 1);
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (result: unknown) => void, reject });
      this.child.send({ id, command, ...fields });
    });
  }
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
  ) {}

  static async start(options: {
    processes: number;
    instances: number;
    clock: FakeClock;
    module: Partial<PlatformAuthOptions> & Record<string, unknown>;
  }): Promise<Fleet> {
    const replicas = await Promise.all(
      Array.from({ length: options.processes }, async () => {
        const child = fork(CHILD, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
        const ready = new Promise<void>((resolve, reject) => {
          child.once('message', () => resolve());
          child.once('exit', (code) => reject(new Error(`replica process exited (${code}) while starting`)));
        });
        child.send({ startMs: options.clock.now(), instances: options.instances, options: options.module });
        await ready;
        return new Replica(child);
      }),
    );
    return new Fleet(replicas, options.clock);
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

  async close(): Promise<void> {
    await Promise.all(
      this.replicas.map(async (replica) => {
        const { child } = replica;
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        await replica.request('close').catch(() => undefined);
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  private live(): Replica[] {
    return this.replicas.filter(({ child }) => child.exitCode === null && child.signalCode === null);
  }
}
