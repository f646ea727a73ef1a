import { Agent } from 'node:http';
import axios, { type AxiosInstance } from 'axios';
import { AssertionSigner } from 'nestjs-platform-auth';
import { createTestCertificates, PlatformEmulator } from 'nestjs-platform-auth/testing';
import { startEchoServerInProcess } from '../support/echo-server.js';
import type { BenchPlatform } from '../support/platform.js';
import { formatNumber, progress, type Report } from '../support/report.js';
import { median, spread } from '../support/stats.js';

/**
 * Scenario 7. How many token exchanges per second the emulator grants, each with a fresh assertion (signed ahead
 * of time, so the client's signing is not what is measured). Baseline: the same client posting the same forms to
 * a server that only answers 200, in this process too, as the emulator is in users' test suites. The same forms
 * also go to a second emulator holding `crowd` more integrations (bulk-registered), interleaved round by round:
 * a token request must take as long with 10,000 integrations as with one.
 */
export async function measureEmulatorThroughput(
  platform: BenchPlatform,
  report: Report,
  sizes: { rounds: number; exchangesPerRound: number; inFlight: number; crowd: number },
): Promise<void> {
  const app = await platform.createApp();
  const echo = await startEchoServerInProcess();
  progress(`emulator throughput: registering ${formatNumber(sizes.crowd)} more integrations in a second emulator`);
  const crowded = await PlatformEmulator.start({ audience: platform.emulator.audience, tokenLifetimeSeconds: 3600 });
  const { certificatePems } = await createTestCertificates(sizes.crowd);
  crowded.registerIntegrations([
    ...certificatePems.map((certificatePem) => ({ certificatePem })),
    { certificatePem: platform.integration.certificatePem, machineId: platform.integration.machineId },
  ]);
  const agent = new Agent({ keepAlive: true });
  try {
    const signer = app.get(AssertionSigner);
    const client = axios.create({
      httpAgent: agent,
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      validateStatus: () => true,
      responseType: 'text',
    });
    const total = sizes.rounds * sizes.exchangesPerRound;
    progress(
      `emulator throughput: signing ${formatNumber(total + 2 * sizes.exchangesPerRound)} fresh assertions ahead of time`,
    );
    const forms = await signForms(signer, total + 2 * sizes.exchangesPerRound, 4);

    progress(
      `emulator throughput: ${sizes.rounds} rounds × ${formatNumber(sizes.exchangesPerRound)} exchanges, ${sizes.inFlight} in flight`,
    );
    const take = (): string[] => forms.splice(0, sizes.exchangesPerRound);
    const echoUrl = `${echo.url}/loginservice/connect/token`;
    // Two batches: the verifier's code paths take longer to warm up than the bare server's.
    for (const warmup of [take(), take()]) {
      await post(client, platform.emulator.tokenUrl, warmup, sizes.inFlight);
      await post(client, echoUrl, warmup, sizes.inFlight);
      await post(client, crowded.tokenUrl, warmup, sizes.inFlight);
    }
    const emulatorRates: number[] = [];
    const crowdedRates: number[] = [];
    const echoRates: number[] = [];
    const acceptedBefore = platform.emulator.counters.exchanges.accepted;
    for (let round = 0; round < sizes.rounds; round += 1) {
      const batch = take();
      // Alternate which goes first, so neither always inherits the other's garbage.
      if (round % 2 === 0) {
        emulatorRates.push(await post(client, platform.emulator.tokenUrl, batch, sizes.inFlight));
        echoRates.push(await post(client, echoUrl, batch, sizes.inFlight));
        crowdedRates.push(await post(client, crowded.tokenUrl, batch, sizes.inFlight));
      } else {
        crowdedRates.push(await post(client, crowded.tokenUrl, batch, sizes.inFlight));
        echoRates.push(await post(client, echoUrl, batch, sizes.inFlight));
        emulatorRates.push(await post(client, platform.emulator.tokenUrl, batch, sizes.inFlight));
      }
    }
    const accepted = platform.emulator.counters.exchanges.accepted - acceptedBefore;
    report.exactly('emulator.accepted', 'emulator throughput: exchanges granted', accepted, total, 'exchanges sent');
    const rate = median(emulatorRates);
    report.info(
      'emulator.rate',
      `emulator: exchanges per second (${sizes.inFlight} in flight)`,
      rate,
      `${formatNumber(rate)} /s`,
      'absolute',
      spread(emulatorRates),
    );
    const ratio = rate / median(echoRates);
    report.info(
      'emulator.vsEcho',
      'emulator: exchange rate',
      ratio,
      `${ratio.toFixed(2)}×`,
      'same POSTs to a bare 200 server',
      spread(emulatorRates.map((r, i) => r / echoRates[i])),
    );
    const crowdRatio = median(crowdedRates.map((r, i) => emulatorRates[i] / r));
    report.atMost(
      'emulator.crowd',
      `emulator: time per exchange with ${formatNumber(sizes.crowd + 1)} integrations`,
      crowdRatio,
      1.05,
      { baseline: 'one integration, same forms', spread: spread(crowdedRates.map((r, i) => emulatorRates[i] / r)) },
    );
    report.detail('emulator', {
      crowdedExchangesPerSecond: crowdedRates.map(Math.round),
      exchangesPerSecond: emulatorRates.map(Math.round),
      bareServerPostsPerSecond: echoRates.map(Math.round),
    });
  } finally {
    agent.destroy();
    await crowded.close();
    await echo.close();
    await app.close();
  }
}

async function signForms(signer: AssertionSigner, count: number, inFlight: number): Promise<string[]> {
  const forms: string[] = [];
  let started = 0;
  const lane = async (): Promise<void> => {
    while (started < count) {
      started += 1;
      const token = await signer.createAssertion();
      forms.push(
        new URLSearchParams({ grant_type: 'clientcertificate', client_id: 'clientcertificate', token }).toString(),
      );
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return forms;
}

/** Posts every form once, `inFlight` at a time; returns requests per second. */
async function post(client: AxiosInstance, url: string, forms: readonly string[], inFlight: number): Promise<number> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < forms.length) {
      const form = forms[next++];
      const response = await client.post(url, form);
      if (response.status !== 200)
        throw new Error(`${url} answered ${response.status}: ${String(response.data).slice(0, 200)}`);
    }
  };
  const startedAt = performance.now();
  await Promise.all(Array.from({ length: inFlight }, lane));
  return (forms.length / (performance.now() - startedAt)) * 1000;
}
