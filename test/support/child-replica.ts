import { fork, type ChildProcess } from 'node:child_process';

/**
 * A replica in a process of its own, driven over IPC: each `ask` sends `{ id, command, ...args }` and resolves with
 * the child's `{ id, result }`. A child that exits fails what is still waiting, so a crash names itself at once.
 */
export class ChildReplica {
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>();

  private constructor(readonly child: ChildProcess) {
    child.on('message', (message: { id?: number; result?: unknown }) => {
      if (message.id === undefined) return;
      this.pending.get(message.id)?.resolve(message.result);
      this.pending.delete(message.id);
    });
    child.once('exit', (code, signal) => {
      for (const { reject } of this.pending.values()) reject(new Error(`replica process exited (${signal ?? code})`));
      this.pending.clear();
    });
  }

  /** A new process of `path`, once its first message says it is ready. */
  static async spawn(path: string): Promise<ChildReplica> {
    const child = fork(path, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`replica process exited (${code}) while starting`)));
    });
    return new ChildReplica(child);
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Whether the process (and its IPC channel) keeps this process's event loop alive. */
  hold(held: boolean): void {
    if (held) {
      this.child.ref();
      this.child.channel?.ref();
    } else {
      this.child.unref();
      this.child.channel?.unref();
    }
  }

  ask<T>(command: string, args: Record<string, unknown> = {}): Promise<T> {
    const id = (this.nextId += 1);
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (result: unknown) => void, reject });
      this.child.send({ id, command, ...args });
    });
  }

  kill(): void {
    this.child.kill();
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
