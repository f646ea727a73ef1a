import { createServer } from 'node:http';
import { Agent, request, type Dispatcher } from 'undici';
import { PlatformFetch, TokenProvider } from 'nestjs-platform-auth';
import { listen, startEchoServerInChild } from '../support/echo-server.js';
import {
  alternateBlocks,
  alternateRequests,
  medianRatio,
  p99Ratio,
  type VariantResult,
} from '../support/interleave.js';
import type { BenchPlatform } from '../support/platform.js';
import { progress, type Report } from '../support/report.js';
import type { HttpOverheadSizes } from './http-overhead.js';

/** The SPEC's round 4 target for the fetch clients against plain fetch with the header hard-coded. */
const TARGET = 1.02;

/**
 * The fetch side of scenario 1: `PlatformFetch` against the global `fetch` with the header hard-coded, and the undici
 * interceptor against the same client on a plain undici `Agent` (global `fetch` with a `dispatcher`, and undici's
 * `request`), all on one loopback server, in one run.
 */
export async function measureFetchOverhead(
  platform: BenchPlatform,
  report: Report,
  sizes: HttpOverheadSizes,
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
    // BENCH_FETCH_VARIANTS="plain fetch|PlatformFetch" draws from those variants only: with all ten drawn in one
    // sequence, each variant's code is cold for each of its requests, which costs most the variant with most code.
    const chosen = process.env.BENCH_FETCH_VARIANTS?.split('|');
    const variants = chosen ? allVariants.filter((variant) => chosen.includes(variant.name)) : allVariants;

    progress(`fetch overhead, sequential: ${sizes.sequentialRounds} rounds × ${sizes.requestsPerRound} requests`);
    const sequential = await alternateRequests(variants, {
      rounds: sizes.sequentialRounds,
      requestsPerRound: sizes.requestsPerRound,
      warmupRequests: 4_000,
    });
    addFigures(report, 'sequential', 'sequential', sequential);

    const mode = `${sizes.inFlight} in flight`;
    progress(`fetch overhead, ${mode}: ${sizes.concurrentRounds} rounds × 2 blocks of ${sizes.perBlock} requests`);
    const concurrent = await alternateBlocks(variants, {
      rounds: sizes.concurrentRounds,
      perBlock: sizes.perBlock,
      inFlight: sizes.inFlight,
      warmupPerVariant: 2_000,
    });
    addFigures(report, `concurrent${sizes.inFlight}`, mode, concurrent);
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

function addFigures(report: Report, key: string, mode: string, results: Map<string, VariantResult>): void {
  const pairs = [
    { id: 'platformFetch', subject: 'PlatformFetch', baseline: 'plain fetch', targeted: true },
    { id: 'dispatcher', subject: 'fetch + dispatcher', baseline: 'fetch + plain Agent', targeted: true },
    { id: 'request', subject: 'request + dispatcher', baseline: 'request + plain Agent', targeted: true },
    { id: 'agent', subject: 'fetch + plain Agent', baseline: 'plain fetch', targeted: false },
    { id: 'composeFetch', subject: 'fetch + no-op composed Agent', baseline: 'fetch + plain Agent', targeted: false },
    {
      id: 'composeRequest',
      subject: 'request + no-op composed Agent',
      baseline: 'request + plain Agent',
      targeted: false,
    },
    {
      id: 'composedInterceptor',
      subject: 'request + composed interceptor',
      baseline: 'request + plain Agent',
      targeted: false,
    },
    { id: 'manualRedirects', subject: 'plain fetch, manual redirects', baseline: 'plain fetch', targeted: false },
    { id: 'twin', subject: 'plain fetch, twin', baseline: 'plain fetch', targeted: false },
  ];
  for (const pair of pairs) {
    const subject = results.get(pair.subject);
    const baseline = results.get(pair.baseline);
    if (!subject || !baseline) continue;
    const against = `${pair.baseline} + hard-coded header`;
    for (const [stat, estimate] of [
      ['median', medianRatio(subject, baseline)],
      ['p99', p99Ratio(subject, baseline)],
    ] as const) {
      const id = `fetch.${key}.${pair.id}.${stat}`;
      const label = `${pair.subject}, ${mode}: ${stat} latency`;
      if (pair.targeted && stat === 'median')
        report.atMost(id, label, estimate.value, TARGET, { baseline: against, spread: estimate.spread });
      else report.info(id, label, estimate.value, `${estimate.value.toFixed(3)}×`, against, estimate.spread);
    }
  }
  report.detail(
    `fetch.${key}`,
    Object.fromEntries(
      [...results].map(([name, r]) => [name, { medianUs: Math.round(r.pooled.median * 10_000) / 10 }]),
    ),
  );
}
