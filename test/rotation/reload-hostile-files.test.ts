import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestCredentials, FakeClock, type TestCredentials } from 'nestjs-platform-auth/testing';
import { loadCredentials } from '../../lib/credentials/credentials.loader.js';
import { pairNames } from '../../lib/credentials/key-pair.sources.js';
import { CredentialsReloader } from '../../lib/credentials/credentials.reloader.js';
import { ConfigReport } from '../../lib/options/config.report.js';
import { PlatformAuthTelemetry } from '../../lib/telemetry/telemetry.service.js';
import { credentialsLifecycle } from '../support/credentials-lifecycle.js';
import { RecordingLogger } from '../support/recording-logger.js';

const INTERVAL = 10_000;
const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((cleanup) => cleanup()));

function reloaderOver(first: TestCredentials) {
  const dir = mkdtempSync(join(tmpdir(), 'platform-auth-hostile-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const keyPath = join(dir, 'tls.key');
  const certificatePath = join(dir, 'tls.crt');
  writeFileSync(keyPath, first.privateKeyPem);
  writeFileSync(certificatePath, first.certificatePem);
  const clock = new FakeClock();
  const sources = { privateKeyPath: keyPath, certificatePath, names: pairNames('key') };
  const logger = new RecordingLogger();
  const observer = PlatformAuthTelemetry.channelOnly('hostile', clock);
  const holder = credentialsLifecycle(
    loadCredentials(sources, clock.now(), new ConfigReport())!,
    clock,
    logger,
    observer,
  );
  const reloader = new CredentialsReloader(sources, INTERVAL, clock, holder, observer, logger, {});
  reloader.start();
  cleanups.push(() => reloader.stop());
  /** Puts `path` in place of the key file in one rename, as a secret update or an attacker with the directory would. */
  const replaceKey = (build: (path: string) => void): void => {
    const staged = join(dir, 'staged');
    build(staged);
    renameSync(staged, keyPath);
  };
  return { dir, keyPath, certificatePath, holder, logger, reloader, replaceKey };
}

/** A shell loop that opens the FIFO for writing over and over: a reader that opens it is never left blocked. */
function endlessWriter(fifo: string, content: string, dir: string): ChildProcess {
  const source = join(dir, 'writer-source');
  writeFileSync(source, content);
  const writer = spawn('sh', ['-c', `while true; do cat '${source}' > '${fifo}'; done`], {
    detached: true,
    stdio: 'ignore',
  });
  cleanups.unshift(() => {
    try {
      process.kill(-writer.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  return writer;
}

describe('the credential reloader reads only regular files, capped in size, without blocking', () => {
  it('checks asynchronously: a check hands back a promise and never holds the event loop for the read', async () => {
    const r = reloaderOver(await createTestCredentials());
    const pending = r.reloader.check();
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toBe('unchanged');
  });

  it('refuses a FIFO swapped in for the key without opening it, keeping the last good pair', async () => {
    const [first, second] = await Promise.all([createTestCredentials(), createTestCredentials()]);
    const r = reloaderOver(first);
    writeFileSync(r.certificatePath, second.certificatePem);
    r.replaceKey((path) => expect(spawnSync('mkfifo', [path]).status).toBe(0));
    // Whoever holds the directory can feed the FIFO: a reader that opens it gets the other key, for ever.
    const writer = endlessWriter(r.keyPath, second.privateKeyPem, r.dir);

    expect(await r.reloader.check()).toBe('rejected');
    expect(r.holder.active.credentials.thumbprint).toBe(first.thumbprint);
    expect(r.reloader.status().problems?.join('\n')).toMatch(
      /key.privateKeyPath \(PLATFORM_PRIVATE_KEY_PATH\): .*tls\.key' is not a regular file \(a FIFO\)/,
    );
    expect(writer.exitCode).toBeNull();
  });

  it('refuses a 256 MB key file from its size alone, without reading it', async () => {
    const r = reloaderOver(await createTestCredentials());
    // Sparse: 256 MB by its size, nothing on disk.
    r.replaceKey((path) => {
      writeFileSync(path, '');
      truncateSync(path, 256 * 1024 * 1024);
    });

    expect(await r.reloader.check()).toBe('rejected');
    expect(r.reloader.status().problems?.join('\n')).toMatch(
      /key.privateKeyPath \(PLATFORM_PRIVATE_KEY_PATH\): .*tls\.key' holds 268435456 bytes; a key or certificate file is at most 65536/,
    );
    expect(r.logger.messages('error').join('\n')).not.toMatch(/PEM text/);
  });
});

describe('start-up reads key and certificate files by the same rules', () => {
  it('refuses a FIFO at the key path from its metadata, without waiting for a writer', async () => {
    const credentials = await createTestCredentials();
    const dir = mkdtempSync(join(tmpdir(), 'platform-auth-hostile-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const keyPath = join(dir, 'tls.key');
    expect(spawnSync('mkfifo', [keyPath]).status).toBe(0);
    const report = new ConfigReport();
    expect(
      loadCredentials(
        { privateKeyPath: keyPath, certificate: credentials.certificatePem, names: pairNames('key') },
        Date.now(),
        report,
      ),
    ).toBe(undefined);
    expect(report.problems.map((p) => `${p.setting}: ${p.message}`).join('\n')).toMatch(
      /key.privateKeyPath \(PLATFORM_PRIVATE_KEY_PATH\): private key file '.*tls\.key' is not a regular file \(a FIFO\)/,
    );
  });
});
