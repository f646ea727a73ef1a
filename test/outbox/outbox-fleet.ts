import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { OutboxEvents, OutboxMessage, OutboxStatus, PlatformOutboxOptions } from 'nestjs-platform-auth/outbox';

const CHILD = fileURLToPath(new URL('./outbox-replica.child.mjs', import.meta.url));

export type ReplicaEvent = {
  [E in keyof OutboxEvents]: { event: E; payload: OutboxEvents[E][0]; replica: number };
}[keyof OutboxEvents];

/** What a replica is started with: the default integration's options, tenants' options, and the outbox's. */
export interface ReplicaSettings {
  integration: Record<string, unknown>;
  tenants?: Record<string, Record<string, unknown>>;
  outbox: Omit<PlatformOutboxOptions, 'reconcile'>;
}

/** An application process with the outbox (test/outbox/outbox-replica.child.mjs), driven over IPC. */
export class OutboxReplica {
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  readonly exited: Promise<void>;

  private constructor(
    readonly child: ChildProcess,
    readonly index: number,
    onEvent: (event: ReplicaEvent) => void,
  ) {
    child.on(
      'message',
      (message: { id?: number; result?: unknown; error?: string; event?: string; payload?: unknown }) => {
        if (message.event !== undefined)
          onEvent({ event: message.event, payload: message.payload, replica: index } as ReplicaEvent);
        if (message.id === undefined) return;
        const waiting = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (message.error !== undefined) waiting?.reject(new Error(message.error));
        else waiting?.resolve(message.result);
      },
    );
    this.exited = new Promise((resolve) =>
      child.once('exit', () => {
        for (const { reject } of this.pending.values()) reject(new Error(`replica ${index} exited`));
        this.pending.clear();
        resolve();
      }),
    );
  }

  /** A new process with its application started. */
  static async start(
    index: number,
    settings: ReplicaSettings,
    onEvent: (event: ReplicaEvent) => void,
  ): Promise<OutboxReplica> {
    const child = fork(CHILD, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`replica ${index} exited (${code}) while loading`)));
    });
    const replica = new OutboxReplica(child, index, onEvent);
    await replica.request('start', { ...settings });
    return replica;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  request<T>(command: string, fields: Record<string, unknown> = {}): Promise<T> {
    const id = (this.nextId += 1);
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.child.send({ id, command, ...fields });
    });
  }

  /** Ids of the messages, or `{ error }` for one the outbox refused. */
  enqueue(messages: readonly OutboxMessage[]): Promise<(string | { error: string })[]> {
    return this.request('enqueue', { messages });
  }

  status(): Promise<OutboxStatus> {
    return this.request('status');
  }

  /** SIGKILL: no shutdown hook runs, a send in flight is cut where it is. */
  async kill(): Promise<void> {
    if (!this.alive) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** A clean stop: the application closes (workers finish their sends), then the process ends. */
  async stop(): Promise<void> {
    if (!this.alive) return;
    await this.request('stop').catch(() => undefined);
    this.child.kill('SIGTERM');
    await this.exited;
  }
}
