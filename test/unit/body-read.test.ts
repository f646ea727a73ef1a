import { describe, expect, it } from 'vitest';
import { readBodyUpTo } from '../../lib/util/body-read.util.js';

/** A body of `chunks` bytes each, counting what was pulled and whether it was cancelled; `failAt` errors that pull. */
function body(sizes: readonly number[], failAt?: number) {
  const seen = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (seen.pulled === failAt) throw new Error('connection reset mid-body');
      const size = sizes[seen.pulled];
      seen.pulled += 1;
      if (size === undefined) controller.close();
      else controller.enqueue(new Uint8Array(size).fill(65));
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { stream, seen };
}

describe('readBodyUpTo', () => {
  it('reads a body within the limit to its end, its bytes in order', async () => {
    const { stream } = body([3, 4]);
    const chunks = await readBodyUpTo(stream, 7);
    expect(Buffer.concat(chunks!).toString()).toBe('AAAAAAA');
  });

  it('stops at the chunk that passes the limit, reads nothing after it, and cancels the stream', async () => {
    const { stream, seen } = body([4, 4, 4, 4]);
    await expect(readBodyUpTo(stream, 7)).resolves.toBeUndefined();
    expect(seen).toEqual({ pulled: 2, cancelled: true });
  });

  it('rejects with the error of a read that fails', async () => {
    const { stream } = body([4, 4], 1);
    await expect(readBodyUpTo(stream, 100)).rejects.toThrow('connection reset mid-body');
  });

  it('takes no body as an empty one', async () => {
    await expect(readBodyUpTo(null, 10)).resolves.toEqual([]);
  });
});
