import { createServer } from 'node:http';
import { Agent, request, type Dispatcher } from 'undici';
import { PlatformFetch, TokenProvider } from 'nestjs-platform-auth';
import { listen, startEchoServerInChild } from '../support/echo-server.js';
import {
  alternateBlocks,
  alternateRequests,
  cpuRatio,
  medianRatio,
  p99Ratio,
  type RatioEstimate,
  type Variant,
  type VariantResult,
} from '../support/interleave.js';
import type { BenchPlatform } from '../support/platform.js';
import { progress, type Report } from '../support/report.js';
import { collectBetweenBlocks, median } from '../support/stats.js';
import type { HttpOverheadSizes } from './http-overhead.js';

/** The SPEC's round 4 target for the fetch clients against plain fetch with the header hard-coded. */
const TARGET = 1.02;

type SequentialSizes = Pick<HttpOverheadSizes, 'sequentialRounds' | 'requestsPerRound'>;

export interface FetchOverheadSizes {
  /** For each pair drawn alone: two clients a round, so more rounds and longer blocks for the same time. */
  readonly pairs: HttpOverheadSizes;
  /** For the draw of every client together, sequential only. */
  readonly together: SequentialSizes;
}

/**
 * The fetch side of scenario 1: `PlatformFetch` against the global `fetch` with the header hard-coded, and the undici
 * interceptor against the same client on a plain undici `Agent` (global `fetch` with a `dispatcher`, and undici's
 * `request`), all on one loopback server, in one run.
 */
export async function measureFetchOverhead(
  platform: BenchPlatform,
  report: Report,
  sizes: FetchOverheadSizes,
): Promise<void> {
  const echo = await startEchoServerInChild();
  const check = await startCheckServer();
  const app = await platform.createApp({ allowedOrigins: [echo.url, check.url] });
  const plainAgent = new Agent();
  // undici's own cost of composing: an interceptor that adds nothing still has every handler wrapped and unwrapped.
  const noopAgent = new Agent();
  const composedNoop = noopAgent.compose((dispatch) => (options, handler) => dispatch(options, handler));
  // The interceptor in a caller's own compose: the rules without the library's dispatcher.
  const interceptorAgent = new Agent();
  try {
    const url = `${echo.url}/api/resource`;
    const authorization = `Bearer ${await app.get(TokenProvider).getAccessToken()}`;
    const headers = { authorization };
    const platformFetch = app.get(PlatformFetch);
    const dispatcher = platformFetch.dispatcher as unknown as Dispatcher;
    const composedPlatform = interceptorAgent.compose(
      platformFetch.interceptor as unknown as Dispatcher.DispatcherComposeInterceptor,
    );
    // undici 7's Agent, as the global fetch (typed by @types/node's undici-types 6) takes it.
    const plainFetchAgent = plainAgent as unknown as RequestInit['dispatcher'];

    await check.expectAuthorized(platformFetch, dispatcher, authorization);

    const drained = (response: Response) => response.arrayBuffer();
    const allVariants = [
      { name: 'plain fetch', send: () => fetch(url, { headers }).then(drained) },
      { name: 'PlatformFetch', send: () => platformFetch.fetch(url).then(drained) },
      {
        name: 'fetch + plain Agent',
        send: () => fetch(url, { headers, dispatcher: plainFetchAgent }).then(drained),
      },
      { name: 'fetch + dispatcher', send: () => fetch(url, { dispatcher: platformFetch.dispatcher }).then(drained) },
      {
        name: 'request + plain Agent',
        send: () => request(url, { headers, dispatcher: plainAgent }).then((r) => r.body.arrayBuffer()),
      },
      { name: 'request + dispatcher', send: () => request(url, { dispatcher }).then((r) => r.body.arrayBuffer()) },
      {
        name: 'fetch + no-op composed Agent',
        send: () =>
          fetch(url, { headers, dispatcher: composedNoop as unknown as RequestInit['dispatcher'] }).then(drained),
      },
      {
        name: 'request + no-op composed Agent',
        send: () => request(url, { headers, dispatcher: composedNoop }).then((r) => r.body.arrayBuffer()),
      },
      {
        name: 'request + composed interceptor',
        send: () => request(url, { dispatcher: composedPlatform }).then((r) => r.body.arrayBuffer()),
      },
      {
        name: 'plain fetch, manual redirects',
        send: () => fetch(url, { headers, redirect: 'manual' }).then(drained),
      },
      // Identical to plain fetch: how far apart two equal clients measure is this run's resolution.
      { name: 'plain fetch, twin', send: () => fetch(url, { headers }).then(drained) },
    ];
    const byName = new Map(allVariants.map((variant) => [variant.name, variant]));
    const mode = `${sizes.pairs.inFlight} in flight`;
    const concurrentKey = `concurrent${sizes.pairs.inFlight}`;
    // BENCH_FETCH_VARIANTS="plain fetch|PlatformFetch" draws from those clients only (and the pairs of them).
    const chosen = process.env.BENCH_FETCH_VARIANTS?.split('|');
    const isChosen = (name: string) => !chosen || chosen.includes(name);

    // Each targeted figure, and the A/A twin that gives their resolution, from a draw of its two clients only.
    const baselineMedians: number[] = [];
    for (const pair of PAIRS.filter((p) => p.drawnAlone && isChosen(p.subject) && isChosen(p.baseline))) {
      const variants = [byName.get(pair.baseline)!, byName.get(pair.subject)!];
      progress(`fetch overhead, ${pair.subject} against ${pair.baseline}, sequential and ${mode}`);
      const sequential = await sequentially(variants, sizes.pairs);
      addFigures(report, 'sequential', 'sequential', sequential, [pair]);
      baselineMedians.push(sequential.get(pair.baseline)!.pooled.median);
      addFigures(report, concurrentKey, mode, await concurrently(variants, sizes.pairs), [pair]);
    }

    // Every client in one draw, sequentially, for the figures that need a common baseline. Each client's own code is
    // cold for each of its requests in a draw of eleven, which costs most the client with most code: information,
    // not the targets' verdict.
    const variants = allVariants.filter((variant) => isChosen(variant.name));
    const drawn = `the ${variants.length} clients drawn together`;
    progress(`fetch overhead, ${drawn}, sequential`);
    addFigures(
      report,
      'sequential',
      `sequential, ${drawn}`,
      await sequentially(variants, sizes.together),
      PAIRS,
      'together',
    );

    progress('fetch overhead, CPU the library adds per request, answered in-process');
    // Set against the quickest baseline's loopback request, so the share is, if anything, overstated.
    await measureAddedCpu(report, platformFetch, echo.url, authorization, Math.min(...baselineMedians));
  } finally {
    await app.close();
    check.close();
    await plainAgent.close();
    await noopAgent.close();
    await interceptorAgent.close();
    await echo.close();
  }
}

/** A server that records the header each request came with: the clients under test must really add the token. */
async function startCheckServer() {
  const seen: (string | undefined)[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers.authorization);
    res.end();
  });
  const url = await listen(server);
  return {
    url,
    async expectAuthorized(platformFetch: PlatformFetch, dispatcher: Dispatcher, expected: string): Promise<void> {
      await platformFetch.fetch(`${url}/check`).then((r) => r.arrayBuffer());
      await fetch(`${url}/check`, { dispatcher: platformFetch.dispatcher }).then((r) => r.arrayBuffer());
      await request(`${url}/check`, { dispatcher }).then((r) => r.body.dump());
      if (seen.length !== 3 || seen.some((header) => header !== expected))
        throw new Error('a client under test did not authorize its request');
    },
    close: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}

interface Pair {
  readonly id: string;
  readonly subject: string;
  readonly baseline: string;
  /** Against the SPEC's target; judged only in the pair's own draw. */
  readonly targeted: boolean;
  /** Also measured in a draw of its two clients only. */
  readonly drawnAlone: boolean;
}

const PAIRS: readonly Pair[] = [
  { id: 'platformFetch', subject: 'PlatformFetch', baseline: 'plain fetch', targeted: true, drawnAlone: true },
  {
    id: 'dispatcher',
    subject: 'fetch + dispatcher',
    baseline: 'fetch + plain Agent',
    targeted: true,
    drawnAlone: true,
  },
  {
    id: 'request',
    subject: 'request + dispatcher',
    baseline: 'request + plain Agent',
    targeted: true,
    drawnAlone: true,
  },
  // Identical clients: how far apart two equal clients measure is the resolution of a pair's draw.
  { id: 'twin', subject: 'plain fetch, twin', baseline: 'plain fetch', targeted: false, drawnAlone: true },
  { id: 'agent', subject: 'fetch + plain Agent', baseline: 'plain fetch', targeted: false, drawnAlone: false },
  {
    id: 'composeFetch',
    subject: 'fetch + no-op composed Agent',
    baseline: 'fetch + plain Agent',
    targeted: false,
    drawnAlone: false,
  },
  {
    id: 'composeRequest',
    subject: 'request + no-op composed Agent',
    baseline: 'request + plain Agent',
    targeted: false,
    drawnAlone: false,
  },
  {
    id: 'composedInterceptor',
    subject: 'request + composed interceptor',
    baseline: 'request + plain Agent',
    targeted: false,
    drawnAlone: false,
  },
  {
    id: 'manualRedirects',
    subject: 'plain fetch, manual redirects',
    baseline: 'plain fetch',
    targeted: false,
    drawnAlone: false,
  },
];

function sequentially(variants: readonly Variant[], sizes: SequentialSizes): Promise<Map<string, VariantResult>> {
  return alternateRequests(variants, {
    rounds: sizes.sequentialRounds,
    requestsPerRound: sizes.requestsPerRound,
    warmupRequests: 4_000,
  });
}

function concurrently(variants: readonly Variant[], sizes: HttpOverheadSizes): Promise<Map<string, VariantResult>> {
  return alternateBlocks(variants, {
    rounds: sizes.concurrentRounds,
    perBlock: sizes.perBlock,
    inFlight: sizes.inFlight,
    warmupPerVariant: 2_000,
  });
}

/**
 * Median and p99 rows for `pairs` measured in `results`. From a pair's own draw (no `draw`), a targeted pair's median
 * is judged against the target; from a draw shared by every client, each figure is information under `draw`'s key.
 */
function addFigures(
  report: Report,
  key: string,
  mode: string,
  results: Map<string, VariantResult>,
  pairs: readonly Pair[],
  draw?: string,
): void {
  for (const pair of pairs) {
    const subject = results.get(pair.subject);
    const baseline = results.get(pair.baseline);
    if (!subject || !baseline) continue;
    const against = `${pair.baseline} + hard-coded header`;
    const estimates = [
      ['median', 'median latency', medianRatio(subject, baseline)],
      ['p99', 'p99 latency', p99Ratio(subject, baseline)],
    ] as [string, string, RatioEstimate][];
    // At 64 in flight, the client's CPU time per request: outside load inflates it less than latency.
    if (subject.cpuPerRequest) estimates.push(['cpu', 'client CPU per request', cpuRatio(subject, baseline)]);
    for (const [stat, what, estimate] of estimates) {
      const id = draw ? `fetch.${key}.${draw}.${pair.id}.${stat}` : `fetch.${key}.${pair.id}.${stat}`;
      const label = `${pair.subject}, ${mode}: ${what}`;
      if (pair.targeted && stat === 'median' && !draw)
        report.atMost(id, label, estimate.value, TARGET, { baseline: against, spread: estimate.spread });
      else report.info(id, label, estimate.value, `${estimate.value.toFixed(3)}×`, against, estimate.spread);
    }
  }
  const detailKey = draw ? `fetch.${key}.${draw}` : `fetch.${key}.${pairs[0].id}`;
  report.detail(
    detailKey,
    Object.fromEntries(
      [...results].map(([name, r]) => [name, { medianUs: Math.round(r.pooled.median * 10_000) / 10 }]),
    ),
  );
}

/**
 * The CPU the library's own path adds to a request, with the request answered in-process at once (no socket, no
 * server): `PlatformFetch.fetch` with the global `fetch` returning a resolved `Response` for the time, and the
 * dispatcher's rules (`interceptor`) in front of a `dispatch` that answers synchronously; each against the same
 * answer for a request with the header hard-coded. Blocks alternate; the figure is the median over rounds of the
 * difference, in ns per request, and its share of a loopback request (`requestMs`: the quickest baseline's median).
 */
async function measureAddedCpu(
  report: Report,
  platformFetch: PlatformFetch,
  origin: string,
  authorization: string,
  requestMs: number,
): Promise<void> {
  const ROUNDS = 9;
  const CALLS = 100_000;
  const url = `${origin}/api/resource`;
  const rawHeaders = [Buffer.from('content-length'), Buffer.from('2')];
  const body = Buffer.from('{}');
  let headerBytes = 0;
  const answer = (options: { headers: Record<string, string> }, handler: Dispatcher.DispatchHandler): boolean => {
    // Reads every header, as undici does before it writes the request.
    for (const name in options.headers) headerBytes += name.length + options.headers[name].length;
    const legacy = handler as unknown as Record<string, (...args: unknown[]) => unknown>;
    legacy.onConnect?.(() => undefined);
    legacy.onHeaders?.(200, rawHeaders, () => undefined, 'OK');
    legacy.onData?.(body);
    legacy.onComplete?.(null);
    return true;
  };
  const sink = { onConnect() {}, onHeaders: () => true, onData: () => true, onComplete() {}, onError() {} };
  const intercepted = (platformFetch.interceptor as unknown as Dispatcher.DispatcherComposeInterceptor)(
    answer as Dispatcher['dispatch'],
  ) as unknown as (options: object, handler: object) => boolean;
  // The header record the global fetch hands a dispatcher: a new one for each request.
  const fetchHeaders = (): Record<string, string> => ({
    accept: '*/*',
    'accept-language': '*',
    'sec-fetch-mode': 'cors',
    'user-agent': 'node',
    'accept-encoding': 'gzip, deflate',
  });
  const dispatchOptions = (headers: Record<string, string>) => ({
    origin,
    path: '/api/resource',
    method: 'GET',
    headers,
  });

  const headers = { authorization };
  const answered = new Response(null, { status: 200 });
  const realFetch = globalThis.fetch;
  const cpuNs = (block: () => void): number => {
    const before = process.cpuUsage();
    block();
    const used = process.cpuUsage(before);
    return ((used.user + used.system) * 1000) / CALLS;
  };
  const asyncCpuNs = async (send: () => Promise<unknown>): Promise<number> => {
    const before = process.cpuUsage();
    for (let i = 0; i < CALLS; i += 1) await send();
    const used = process.cpuUsage(before);
    return ((used.user + used.system) * 1000) / CALLS;
  };
  const dispatcherAdded: number[] = [];
  const fetchAdded: number[] = [];
  globalThis.fetch = () => Promise.resolve(answered);
  try {
    for (let round = 0; round <= ROUNDS; round += 1) {
      collectBetweenBlocks();
      const plainDispatch = cpuNs(() => {
        for (let i = 0; i < CALLS; i += 1) {
          const headers = fetchHeaders();
          headers.authorization = authorization;
          answer(dispatchOptions(headers), sink);
        }
      });
      const platformDispatch = cpuNs(() => {
        for (let i = 0; i < CALLS; i += 1) intercepted(dispatchOptions(fetchHeaders()), sink);
      });
      const plainFetch = await asyncCpuNs(() => fetch(url, { headers }));
      const platform = await asyncCpuNs(() => platformFetch.fetch(url));
      // The first round warms the code.
      if (round === 0) continue;
      dispatcherAdded.push(platformDispatch - plainDispatch);
      fetchAdded.push(platform - plainFetch);
    }
  } finally {
    globalThis.fetch = realFetch;
  }
  if (headerBytes === 0) throw new Error('the in-process answer never saw a request');
  for (const [id, name, added] of [
    ['platformFetch', 'PlatformFetch', fetchAdded],
    ['dispatcher', "the dispatcher's rules", dispatcherAdded],
  ] as const) {
    const ns = median(added);
    const share = ns / (requestMs * 1e6);
    report.info(
      `fetch.addedCpu.${id}`,
      `${name}: CPU added per request, answered in-process`,
      ns,
      `${Math.round(ns)} ns (${(share * 100).toFixed(2)} % of the quickest loopback request)`,
      'the same answer, header hard-coded',
      { min: Math.min(...added), max: Math.max(...added), kind: 'range' },
    );
  }
}
