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
}
