import { collectBetweenBlocks, quantile, summarize, type Summary } from './stats.js';

export interface Variant {
  readonly name: string;
  readonly send: () => Promise<unknown>;
}

export interface VariantResult {
  /** All rounds' samples together. */
  readonly pooled: Summary;
  readonly rounds: readonly Summary[];
  /** Latencies (ms) of each round. */
  readonly samples: readonly Float64Array[];
  /** This process's CPU time (user + system) per request, µs, one figure per round; block mode only. */
  readonly cpuPerRequest?: readonly number[];
}

/**
 * One request at a time, each sent by a variant drawn at random (fixed seed). Outside load then lands on every
 * variant alike, and so does the work a request leaves behind (socket bookkeeping after the response) for the next
 * one: with a fixed rotation, each variant would always pay for the same predecessor's leftovers.
 */
export async function alternateRequests(
  variants: readonly Variant[],
  options: { rounds: number; requestsPerRound: number; warmupRequests: number; onRound?: (round: number) => void },
): Promise<Map<string, VariantResult>> {
  const random = seededRandom(0x5eed);
  const runRequests = async (count: number, record?: number[][]): Promise<void> => {
    for (let i = 0; i < count; i += 1) {
      const index = Math.floor(random() * variants.length);
      const startedAt = performance.now();
      await variants[index].send();
      record?.[index]!.push(performance.now() - startedAt);
    }
  };
  await runRequests(options.warmupRequests);
  const rounds = variants.map(() => [] as Float64Array[]);
  for (let round = 0; round < options.rounds; round += 1) {
    collectBetweenBlocks();
    const record = variants.map(() => [] as number[]);
    await runRequests(options.requestsPerRound, record);
    record.forEach((samples, i) => rounds[i].push(Float64Array.from(samples)));
    options.onRound?.(round + 1);
  }
  return results(variants, rounds);
}

/** mulberry32: a small, fast PRNG, seeded so every run draws the same sequence. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * `inFlight` requests at a time, one variant per block: latency under concurrency depends on what else is in
 * flight, so variants cannot share a block. Each round runs every variant twice, in mirrored order (ABCD DCBA, then
 * BCDA ADCB, …), so a drift in outside load during the round cancels out, and no variant always follows the same
 * other. Blocks are short and rounds many; a forced minor GC before each block keeps one variant's young garbage
 * from being collected on another's time (a full one would deoptimize the path measured: `collectBetweenBlocks`).
 */
export async function alternateBlocks(
  variants: readonly Variant[],
  options: {
    rounds: number;
    perBlock: number;
    inFlight: number;
    warmupPerVariant: number;
    onRound?: (round: number) => void;
  },
): Promise<Map<string, VariantResult>> {
  for (const variant of variants)
    await runBlock(variant.send, new Float64Array(options.warmupPerVariant), options.inFlight);
  const rounds = variants.map(() => [] as Float64Array[]);
  const cpu = variants.map(() => [] as number[]);
  for (let round = 0; round < options.rounds; round += 1) {
    const order = variants.map((_, k) => (round + k) % variants.length);
    const latencies = variants.map(() => new Float64Array(2 * options.perBlock));
    const cpuMicros = variants.map(() => 0);
    for (const [position, index] of [...order, ...[...order].reverse()].entries()) {
      collectBetweenBlocks();
      const half = position < variants.length ? 0 : options.perBlock;
      const cpuBefore = process.cpuUsage();
      await runBlock(variants[index].send, latencies[index].subarray(half, half + options.perBlock), options.inFlight);
      const cpuUsed = process.cpuUsage(cpuBefore);
      cpuMicros[index] += cpuUsed.user + cpuUsed.system;
    }
    latencies.forEach((samples, i) => rounds[i].push(samples));
    cpuMicros.forEach((micros, i) => cpu[i].push(micros / (2 * options.perBlock)));
    options.onRound?.(round + 1);
  }
  return results(variants, rounds, cpu);
}

/** Fills `latencies` with one request's latency (ms) per slot, `inFlight` requests at a time. */
async function runBlock(send: () => Promise<unknown>, latencies: Float64Array, inFlight: number): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < latencies.length) {
      const index = next++;
      const startedAt = performance.now();
      await send();
      latencies[index] = performance.now() - startedAt;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
}

function concat(arrays: readonly Float64Array[]): Float64Array {
  const all = new Float64Array(arrays.reduce((n, samples) => n + samples.length, 0));
  let offset = 0;
  for (const samples of arrays) {
    all.set(samples, offset);
    offset += samples.length;
  }
  return all;
}

function results(variants: readonly Variant[], rounds: Float64Array[][], cpu?: number[][]): Map<string, VariantResult> {
  return new Map(
    variants.map((variant, i) => {
      const perRound = rounds[i];
      const pooled = concat(perRound);
      return [
        variant.name,
        { pooled: summarize(pooled), rounds: perRound.map(summarize), samples: perRound, cpuPerRequest: cpu?.[i] },
      ];
    }),
  );
}

export interface RatioEstimate {
  readonly value: number;
  readonly spread: { readonly min: number; readonly max: number; readonly kind: 'iqr' | 'range' };
}

/**
 * The median's ratio is taken round by round (each round compares variants measured side by side) and summarised by
 * the median and interquartile range of those ratios.
 */
export function medianRatio(subject: VariantResult, baseline: VariantResult): RatioEstimate {
  const perRound = Float64Array.from(subject.rounds, (summary, i) => summary.median / baseline.rounds[i].median).sort();
  return {
    value: quantile(perRound, 0.5),
    spread: { min: quantile(perRound, 0.25), max: quantile(perRound, 0.75), kind: 'iqr' },
  };
}

/**
 * A round holds too few samples for its own p99 (a few hundred: the p99 would be the third-slowest request), so the
 * p99 is taken over all rounds pooled, and its spread as the range over `groups` runs of consecutive rounds.
 */
export function p99Ratio(subject: VariantResult, baseline: VariantResult, groups = 4): RatioEstimate {
  const p99 = (rounds: readonly Float64Array[]): number => summarize(concat(rounds)).p99;
  const size = Math.ceil(subject.samples.length / groups);
  const perGroup: number[] = [];
  for (let start = 0; start < subject.samples.length; start += size) {
    perGroup.push(p99(subject.samples.slice(start, start + size)) / p99(baseline.samples.slice(start, start + size)));
  }
  return {
    value: subject.pooled.p99 / baseline.pooled.p99,
    spread: { min: Math.min(...perGroup), max: Math.max(...perGroup), kind: 'range' },
  };
}

/** This process's CPU time per request, round by round, like the median. */
export function cpuRatio(subject: VariantResult, baseline: VariantResult): RatioEstimate {
  const perRound = Float64Array.from(subject.cpuPerRequest!, (micros, i) => micros / baseline.cpuPerRequest![i]).sort();
  return {
    value: quantile(perRound, 0.5),
    spread: { min: quantile(perRound, 0.25), max: quantile(perRound, 0.75), kind: 'iqr' },
  };
}
