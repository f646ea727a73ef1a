import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A bench process of its own, driven over IPC one request at a time: each message sent is answered by one. */
export class BenchChild {
  private constructor(private readonly child: ChildProcess) {}

  /** Forks `script` (relative to bench/support/) and waits for its first message, which it returns. */
  static async start<T>(script: string): Promise<{ child: BenchChild; hello: T }> {
    const path = fileURLToPath(new URL(script, import.meta.url));
    const child = new BenchChild(fork(path, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
    return { child, hello: await child.reply<T>() };
  }

  get pid(): number {
    return this.child.pid!;
  }

  request<T>(message: unknown): Promise<T> {
    const answered = this.reply<T>();
    this.child.send(message as object);
    return answered;
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.disconnect();
    await exited;
  }

  private reply<T>(): Promise<T> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null): void => reject(new Error(`a bench child process exited (${code})`));
      this.child.once('exit', onExit);
      this.child.once('message', (message) => {
        this.child.off('exit', onExit);
        resolve(message as T);
      });
    });
  }
}
