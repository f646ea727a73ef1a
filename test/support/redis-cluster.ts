import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll } from 'vitest';
import { RedisServer, until } from './redis-server.js';

const REDIS_CLI = '/usr/bin/redis-cli';

/**
 * A Redis Cluster of 3 masters (no replicas) on loopback, made as operators make one: three cluster-enabled
 * redis-servers, then `redis-cli --cluster create`. A node killed and launched again rejoins with its nodes.conf.
 */
export class RedisCluster {
  /** How long the nodes took to start and the cluster to agree that it is up. */
  startMs = 0;

  private constructor(readonly nodes: readonly RedisServer[]) {}

  /** `args`: more arguments for every node (`--appendonly yes`, …). */
  static async start(args: readonly string[] = []): Promise<RedisCluster> {
    const startedAt = performance.now();
    const nodes = await Promise.all(
      Array.from({ length: 3 }, () =>
        RedisServer.start([
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          // Short, so a killed node is marked failed (and its slots down) within a few seconds.
          '--cluster-node-timeout',
          '1000',
          ...args,
        ]),
      ),
    );
    const cluster = new RedisCluster(nodes);
    try {
      await promisify(execFile)(REDIS_CLI, [
        '--cluster',
        'create',
        ...nodes.map((node) => node.address),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ]);
      await cluster.untilState('ok');
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    cluster.startMs = performance.now() - startedAt;
    return cluster;
  }

  /** Seed-node URLs, as `PLATFORM_TOKEN_STORE_CLUSTER_NODES` lists them. */
  get urls(): string[] {
    return this.nodes.map((node) => node.url);
  }

  /** Waits until every running node reports `cluster_state:<state>`. */
  async untilState(state: 'ok' | 'fail'): Promise<void> {
    await until(async () => {
      const infos = await Promise.all(
        this.nodes.filter((node) => node.running).map((node) => node.command('CLUSTER', 'INFO').catch(() => '')),
      );
      return infos.every((info) => String(info).includes(`cluster_state:${state}`));
    }, `cluster_state:${state}`);
  }

  /** The node that holds keys starting with `prefix` (the integration's slot owner). */
  async ownerOf(prefix: string): Promise<RedisServer> {
    for (const node of this.nodes) {
      const keys = (await node.command('KEYS', `${prefix}*`)) as string[];
      if (keys.length > 0) return node;
    }
    throw new Error(`no node holds keys starting with ${prefix}`);
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
  }
}

/** One cluster for a test file, started before its tests and stopped after them; `args` for every node. */
export function useRedisCluster(args: readonly string[] = []): () => RedisCluster {
  let cluster: RedisCluster | undefined;
  beforeAll(async () => {
    cluster = await RedisCluster.start(args);
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  return () => {
    if (!cluster) throw new Error('useRedisCluster(): the cluster starts in beforeAll');
    return cluster;
  };
}
