/** Nearest-rank quantile of an ascending array. */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil(q * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))];
}

export interface Summary {
  readonly count: number;
  readonly median: number;
  readonly p99: number;
}

export function summarize(samples: Float64Array): Summary {
  const sorted = Float64Array.from(samples).sort();
  return { count: sorted.length, median: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
}

export function median(values: readonly number[]): number {
  return quantile(Float64Array.from(values).sort(), 0.5);
}

export interface Spread {
  readonly min: number;
  readonly max: number;
}

export function spread(values: readonly number[]): Spread {
  return { min: Math.min(...values), max: Math.max(...values) };
}

/** Collects garbage until the heap stops shrinking, so two readings compare live data rather than GC timing. */
export function settledHeapUsed(): number {
  const gc = requireGc();
  let previous = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 10; i += 1) {
    gc();
    const used = process.memoryUsage().heapUsed;
    if (used >= previous - 64 * 1024) return used;
    previous = used;
  }
  return previous;
}

/** `BENCH_BLOCK_GC=full` brings back the full collection between blocks, to compare the two. */
export const BLOCK_GC = blockGc(process.env.BENCH_BLOCK_GC);

function blockGc(value: string | undefined): 'full' | 'minor' {
  if (value === undefined || value === '' || value === 'minor') return 'minor';
  if (value === 'full') return 'full';
  throw new Error(`BENCH_BLOCK_GC must be "full" or "minor", not ${JSON.stringify(value)}`);
}

/**
 * Empties the young generation between measured blocks and rounds, so one variant's short-lived garbage is not
 * collected on another's time. A minor collection, not a full one: a full collection also drops the optimized code
 * that holds objects it frees (V8's "weak objects" deoptimization). Forced before every block, it did that to Node's
 * and undici's request path each time (in a driver, 433 deoptimizations over 40 blocks of 2,000 requests at 64 in
 * flight, none with a minor collection), so each block ran half warmed up, at twice the CPU per request (83–100 µs
 * against 40–60 µs), and any code a client added to that path weighed several times what it does in a running app.
 */
export function collectBetweenBlocks(): void {
  requireGc()(BLOCK_GC === 'full' ? undefined : { type: 'minor' });
}

// Only `{ type: 'minor' }` or nothing (a full collection): in Node 20's V8, `{ type: 'major' }` alone runs a minor one.
function requireGc(): (options?: { type: 'minor' }) => void {
  const gc = (globalThis as { gc?: (options?: { type: 'minor' }) => void }).gc;
  if (!gc) throw new Error('run the bench with node --expose-gc (npm run bench does)');
  return gc;
}
