import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { AssertionSigner } from 'nestjs-platform-auth';
import type { BenchPlatform } from '../support/platform.js';
import { progress, type Report } from '../support/report.js';
import { median, spread } from '../support/stats.js';

const LIMIT = 0.9;

/**
 * Scenario 5. `AssertionSigner.createAssertion()` against raw RS256 with node:crypto on the same KeyObject and a
 * signing input of the same size, twice: one at a time against synchronous `crypto.sign` (what one caller sees), and
 * `inFlight` at a time against the callback form of `crypto.sign`, on libuv's threadpool (what a busy process gets
 * out of the machine).
 */
export async function measureSigning(
  platform: BenchPlatform,
  report: Report,
  sizes: { rounds: number; blockMs: number; inFlight: number },
): Promise<void> {
  const app = await platform.createApp();
  try {
    const signer = app.get(AssertionSigner);
    // The same key, parsed the same way: a node:crypto KeyObject from the integration's PEM.
    const key = createPrivateKey(platform.integration.privateKeyPem);
    const assertion = await signer.createAssertion();
    const signingInput = Buffer.from(assertion.slice(0, assertion.lastIndexOf('.')));

    const modes = [
      {
        key: 'sequential',
        label: 'one at a time',
        inFlight: 1,
        baseline: 'crypto.sign (sync), same key',
        subject: () => signer.createAssertion(),
        raw: () => Promise.resolve(sign('sha256', signingInput, key)),
      },
      {
        key: `concurrent${sizes.inFlight}`,
        label: `${sizes.inFlight} in flight`,
        inFlight: sizes.inFlight,
        baseline: 'crypto.sign (callback, threadpool), same key',
        subject: () => signer.createAssertion(),
        raw: () => signAsync(signingInput, key),
      },
    ];
    for (const mode of modes) {
      progress(`assertion signing, ${mode.label}: ${sizes.rounds} rounds × 2 × ${sizes.blockMs} ms`);
      await rate(mode.subject, mode.inFlight, sizes.blockMs / 4);
      await rate(mode.raw, mode.inFlight, sizes.blockMs / 4);
      const subjectRates: number[] = [];
      const rawRates: number[] = [];
      for (let round = 0; round < sizes.rounds; round += 1) {
        // Alternate which goes first, so neither always follows the other's garbage or thermal state.
        if (round % 2 === 0) {
          subjectRates.push(await rate(mode.subject, mode.inFlight, sizes.blockMs));
          rawRates.push(await rate(mode.raw, mode.inFlight, sizes.blockMs));
        } else {
          rawRates.push(await rate(mode.raw, mode.inFlight, sizes.blockMs));
          subjectRates.push(await rate(mode.subject, mode.inFlight, sizes.blockMs));
        }
      }
      const ratio = median(subjectRates) / median(rawRates);
      report.atLeast(`signing.${mode.key}`, `createAssertion() rate, ${mode.label}`, ratio, LIMIT, {
        baseline: mode.baseline,
        spread: spread(subjectRates.map((r, i) => r / rawRates[i])),
      });
      report.detail(`signing.${mode.key}`, {
        assertionsPerSecond: Math.round(median(subjectRates)),
        rawSignaturesPerSecond: Math.round(median(rawRates)),
      });
    }
  } finally {
    await app.close();
  }
}

function signAsync(data: Buffer, key: KeyObject): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    sign('sha256', data, key, (error, signature) => (error ? reject(error) : resolve(signature))),
  );
}

/** Operations per second, `inFlight` at a time, over about `ms` of wall time. */
async function rate(operation: () => Promise<unknown>, inFlight: number, ms: number): Promise<number> {
  let done = 0;
  const startedAt = performance.now();
  const deadline = startedAt + ms;
  const lane = async (): Promise<void> => {
    while (performance.now() < deadline) {
      await operation();
      done += 1;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return (done / (performance.now() - startedAt)) * 1000;
}
