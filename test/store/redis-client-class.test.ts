import * as redis from 'redis';
import { describe, expect, it } from 'vitest';
import { buildClient } from '../../lib/store/redis-client.factory.js';
import type { RedisConnectionSettings } from '../../lib/store/redis-connection.options.js';
import { secretText } from '../../lib/util/secret.util.js';

const standalone = (port: number, password: string): RedisConnectionSettings => ({
  mode: 'standalone',
  nodes: [{ host: '127.0.0.1', port }],
  password: secretText(password),
});

/** The class node-redis built for a client: `create` hands out an object whose prototype is the instance. */
const classOf = (client: object): unknown => Object.getPrototypeOf(Object.getPrototypeOf(client)).constructor;

describe('the store’s node-redis clients', () => {
  it('share one client class whatever their address and password (node-redis builds one per options otherwise)', () => {
    const a = buildClient(redis, standalone(6379, 'one'), 1_000).client;
    const b = buildClient(redis, standalone(6380, 'two'), 1_000).client;
    const c = buildClient(redis, standalone(6381, 'three'), 1_000).client;
    expect(classOf(b)).toBe(classOf(a));
    expect(classOf(c)).toBe(classOf(a));
    // Each keeps its own options: the class is shared, the connection settings are not.
    const optionsOf = (client: object) => (client as { options?: { socket?: { port?: number } } }).options;
    expect([a, b, c].map((client) => optionsOf(client)?.socket?.port)).toEqual([6379, 6380, 6381]);
  });

  it('are made by createClient with a node-redis that does not export its client class (5.0)', () => {
    const made: unknown[] = [];
    const older = {
      ...redis,
      RedisClient: undefined,
      createClient: (options: unknown) => {
        made.push(options);
        return redis.createClient(options as Parameters<typeof redis.createClient>[0]);
      },
    };
    buildClient(older, standalone(6379, 'one'), 1_000);
    buildClient(older, standalone(6380, 'two'), 1_000);
    expect(made).toHaveLength(2);
  });
});
