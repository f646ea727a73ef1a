import { createHook } from 'node:async_hooks';
import { createPrivateKey, randomBytes, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTestCredentials } from 'nestjs-platform-auth/testing';
import { InMemoryAssertionKey } from '../../lib/credentials/in-memory.assertion-key.js';

/** How many of `run`'s signatures were made on libuv's threads: each of those calls back into the event loop. */
async function signaturesOnThreads(run: () => Promise<void>): Promise<number> {
  const jobs = new Set<number>();
  let calledBack = 0;
  const hook = createHook({
    init: (id, type) => void (type === 'SIGNREQUEST' && jobs.add(id)),
    before: (id) => void (jobs.has(id) && (calledBack += 1)),
  }).enable();
  try {
    await run();
  } finally {
    hook.disable();
  }
  return calledBack;
}

describe('a PEM key in memory', () => {
  it('signs one wanted alone on the event loop; its first, and several wanted at once, on libuv threads', async () => {
    const credentials = await createTestCredentials();
    const key = new InMemoryAssertionKey(createPrivateKey(credentials.privateKeyPem), 'key.privateKey PEM text');
    const input = randomBytes(64);
    const signatures: Uint8Array[] = [];
    const sign = async (): Promise<void> => void signatures.push(await key.sign(input));
    const onThreads = await signaturesOnThreads(async () => {
      await sign(); // the key's first
      await sign(); // alone
      await Promise.all([sign(), sign(), sign()]); // three at once
      await sign(); // alone again
    });
    expect(onThreads).toBe(4);
    expect(signatures).toHaveLength(6);
    for (const signature of signatures) expect(verify('sha256', input, key.publicKey, signature)).toBe(true);
  });
});
