import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { renderReachable } from '../support/reachable-rendering.js';
import { useRedisServer } from '../support/redis-server.js';
import { useOutboxFixtures } from './outbox-kit.js';

const PASSWORD = randomBytes(12).toString('hex');
const redis = useRedisServer({ args: ['--requirepass', PASSWORD], password: PASSWORD });
const start = useOutboxFixtures();

const MESSAGE = { method: 'POST', path: '/api/messages', body: { text: 'hello' } } as const;

describe("the outbox's Redis password", () => {
  it.each([
    ['connection options', () => ({ url: `redis://127.0.0.1:${redis().port}`, password: PASSWORD })],
    ['a URL', () => ({ url: `redis://:${PASSWORD}@127.0.0.1:${redis().port}` })],
  ])('is used but never rendered from %s: not in the providers, the status or an error', async (_given, connection) => {
    const f = await start(redis().url, { connection: connection(), worker: false });
    const id = await f.outbox.enqueue(MESSAGE);
    const status = await f.outbox.status();
    expect(status).toMatchObject({ waiting: 1 });

    const shown = [
      renderReachable(f.app, 12),
      JSON.stringify(status),
      String(await f.outbox.retry(id).catch((error: unknown) => error)),
    ];
    for (const text of shown) expect(text).not.toContain(PASSWORD);
  });
});
