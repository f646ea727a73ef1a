import { execFileSync } from 'node:child_process';
import { createPrivateKey, sign } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { INestApplicationContext } from '@nestjs/common';
import { AssertionSigner, type PlatformAuthSigner } from 'nestjs-platform-auth';
import type { BenchPlatform } from '../support/platform.js';
import { progress, type Report } from '../support/report.js';
import { median, spread } from '../support/stats.js';

const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';
const PIN = '11223344';
const CLI = fileURLToPath(new URL('../../../dist/cli/main.js', import.meta.url));

/**
 * Assertions signed per second by `AssertionSigner.createAssertion()` with the key in three places, in the same run:
 * a PEM key in memory (the baseline: node:crypto over a KeyObject), a key inside a SoftHSM2 token (PKCS#11,
 * CKM_SHA256_RSA_PKCS, each signature verified against the certificate), and an application `signer` wrapping
 * node:crypto (the cost of the seam and the check alone, without a network). Reported, not targeted: a token is
 * signed with once per renewal.
 */
export async function measureKeyCustody(
  platform: BenchPlatform,
  report: Report,
  sizes: { rounds: number; blockMs: number; inFlight: number },
): Promise<void> {
  const hsm = softHsmWithKey();
  const apps: INestApplicationContext[] = [];
  try {
    const { machineId } = platform.emulator.registerIntegration({ certificatePem: hsm.certificatePem });
    const key = createPrivateKey(platform.integration.privateKeyPem);
    const signer: PlatformAuthSigner = { sign: (input) => Promise.resolve(sign('sha256', input, key)) };
    const start = async (options: Parameters<BenchPlatform['createApp']>[0]) => {
      const app = await platform.createApp(options);
      apps.push(app);
      return app.get(AssertionSigner);
    };
    const sources = {
      pem: await start({}),
      pkcs11: await start({ key: { privateKeyUri: hsm.uri, certificate: hsm.certificatePem }, machineId }),
      signer: await start({ key: { signer, certificate: platform.integration.certificatePem } }),
    };
    for (const inFlight of [1, sizes.inFlight]) {
      const label = inFlight === 1 ? 'one at a time' : `${inFlight} in flight`;
      progress(`key custody, ${label}: ${sizes.rounds} rounds × 3 × ${sizes.blockMs} ms`);
      const rates: Record<keyof typeof sources, number[]> = { pem: [], pkcs11: [], signer: [] };
      const order = Object.keys(sources) as (keyof typeof sources)[];
      for (const name of order) await rate(() => sources[name].createAssertion(), inFlight, sizes.blockMs / 4);
      for (let round = 0; round < sizes.rounds; round += 1) {
        // Rotate which goes first, so none always follows another's garbage.
        for (const name of [...order.slice(round % 3), ...order.slice(0, round % 3)]) {
          rates[name].push(await rate(() => sources[name].createAssertion(), inFlight, sizes.blockMs));
        }
      }
      const id = inFlight === 1 ? 'sequential' : `concurrent${inFlight}`;
      for (const name of ['pkcs11', 'signer'] as const) {
        const ratio = median(rates[name]) / median(rates.pem);
        report.info(
          `keyCustody.${name}.${id}`,
          `createAssertion() rate, ${name === 'pkcs11' ? 'key in SoftHSM2 (PKCS#11)' : 'signer wrapping node:crypto'}, ${label}`,
          ratio,
          `${ratio.toFixed(3)}×`,
          'PEM key in memory, same run',
          spread(rates[name].map((r, i) => r / rates.pem[i])),
        );
      }
      report.detail(`keyCustody.${id}`, {
        pemAssertionsPerSecond: Math.round(median(rates.pem)),
        pkcs11AssertionsPerSecond: Math.round(median(rates.pkcs11)),
        signerAssertionsPerSecond: Math.round(median(rates.signer)),
      });
    }
  } finally {
    for (const app of apps) await app.close();
    hsm.remove();
  }
}

/** A throwaway SoftHSM2 token with a key made by `platform-auth keygen --key-uri`, as a user makes one. */
function softHsmWithKey(): { uri: string; certificatePem: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'platform-auth-bench-softhsm-'));
  mkdirSync(join(dir, 'tokens'));
  const conf = join(dir, 'softhsm2.conf');
  writeFileSync(conf, `directories.tokendir = ${join(dir, 'tokens')}\nobjectstore.backend = file\nlog.level = ERROR\n`);
  writeFileSync(join(dir, 'pin'), PIN, { mode: 0o600 });
  // Read by the library in this process when it first opens the token.
  process.env.SOFTHSM2_CONF = conf;
  const env = { ...process.env, SOFTHSM2_CONF: conf };
  execFileSync('softhsm2-util', ['--init-token', '--free', '--label', 'bench', '--pin', PIN, '--so-pin', PIN], { env });
  const uri = `pkcs11:token=bench;object=bench-key?module-path=${SOFTHSM_MODULE}&pin-source=file:${join(dir, 'pin')}`;
  execFileSync(process.execPath, [CLI, 'keygen', '--key-uri', uri, '--out', dir, '--json'], { env });
  return {
    uri,
    certificatePem: readFileSync(join(dir, 'publickey.cer'), 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
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
