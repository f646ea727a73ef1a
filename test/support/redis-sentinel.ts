import { afterAll, beforeAll } from 'vitest';
import { RedisServer, until } from './redis-server.js';

export const SENTINEL_MASTER = 'platform-auth-master';

/**
 * A master, a replica of it and one sentinel watching them (quorum 1) on loopback: the smallest Sentinel set-up that
 * fails over. The sentinel declares the master down after 1 s without an answer.
 */
export class RedisSentinelSetup {
  /** How long the servers took to start and the sentinel to know the replica. */
  startMs = 0;

  private constructor(
    readonly master: RedisServer,
    readonly replica: RedisServer,
    readonly sentinel: RedisServer,
  ) {}

  static async start(): Promise<RedisSentinelSetup> {
    const startedAt = performance.now();
    const master = await RedisServer.start();
    const [replica, sentinel] = await Promise.all([
      RedisServer.start(['--replicaof', '127.0.0.1', String(master.port)]),
      RedisServer.start({
        sentinelConfig: [
          `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${master.port} 1`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER} 1000`,
          `sentinel failover-timeout ${SENTINEL_MASTER} 10000`,
        ].join('\n'),
      }),
    ]);
    const setup = new RedisSentinelSetup(master, replica, sentinel);
    try {
      await until(async () => {
        const replicas = (await sentinel.command('SENTINEL', 'REPLICAS', SENTINEL_MASTER)) as unknown[];
        const info = String(await replica.command('INFO', 'replication'));
        return replicas.length === 1 && info.includes('master_link_status:up');
      }, 'the sentinel knows the replica, and the replica is in sync');
    } catch (error) {
      await setup.stop();
      throw error;
    }
    setup.startMs = performance.now() - startedAt;
    return setup;
  }

  /** The port of the server the sentinel names as master now. */
  async masterPort(): Promise<number> {
    const [, port] = (await this.sentinel.command('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER)) as string[];
    return Number(port);
  }

  /** Kills the master and waits until the sentinel has promoted the replica and the replica acts as master. */
  async failOver(): Promise<void> {
    await this.master.kill();
    await until(async () => {
      const role = (await this.replica.command('ROLE')) as string[];
      return (await this.masterPort()) === this.replica.port && role[0] === 'master';
    }, 'the sentinel promotes the replica');
  }

  async stop(): Promise<void> {
    await Promise.all([this.sentinel.stop(), this.replica.stop(), this.master.stop()]);
  }
}

/** One Sentinel set-up for a test file, started before its tests and stopped after them. */
export function useRedisSentinel(): () => RedisSentinelSetup {
  let setup: RedisSentinelSetup | undefined;
  beforeAll(async () => {
    setup = await RedisSentinelSetup.start();
  });
  afterAll(async () => {
    await setup?.stop();
  });
  return () => {
    if (!setup) throw new Error('useRedisSentinel(): the set-up starts in beforeAll');
    return setup;
  };
}
