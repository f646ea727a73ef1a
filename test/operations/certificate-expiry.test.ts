import { describe, expect, it } from 'vitest';
import { createTestCredentials, FakeClock } from 'nestjs-platform-auth/testing';
import { CertificateExpiryMonitor } from '../../lib/credentials/certificate-expiry.monitor.js';
import type { ActiveCredentials } from '../../lib/credentials/active-credentials.js';
import { loadCredentials } from '../../lib/credentials/credentials.loader.js';
import { pairNames } from '../../lib/credentials/key-pair.sources.js';
import { ConfigReport } from '../../lib/options/config.report.js';
import { PlatformAuthTelemetry } from '../../lib/telemetry/telemetry.service.js';
import { RecordingLogger } from '../support/recording-logger.js';

const DAY = 24 * 60 * 60 * 1000;

async function loaded(now: number, daysValid: number) {
  const pem = await createTestCredentials({
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + daysValid * DAY),
  });
  const credentials = loadCredentials(
    { privateKey: pem.privateKeyPem, certificate: pem.certificatePem, names: pairNames('key') },
    now,
    new ConfigReport(),
  );
  return credentials!;
}

async function startMonitor(daysValid: number) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const holder: { active: ActiveCredentials } = {
    active: { machineId: 'machine', credentials: await loaded(clock.now(), daysValid), activatedAtMs: clock.now() },
  };
  const logger = new RecordingLogger();
  const monitor = new CertificateExpiryMonitor(clock, holder, PlatformAuthTelemetry.channelOnly('abc', clock), logger);
  monitor.start();
  return { clock, holder, logger, monitor, warnings: () => logger.messages('warn') };
}

describe('certificate expiry monitor', () => {
  it('warns at 30, 14, 7 and 1 days left while running, each once, with the rotation steps', async () => {
    const { clock, warnings, monitor } = await startMonitor(45);
    expect(warnings()).toEqual([]);
    // Hour by hour through 45 days: each threshold is crossed exactly once.
    for (let hour = 0; hour < 44 * 24; hour += 1) clock.advance(60 * 60 * 1000);
    const daysInMessages = warnings().map((message) => /expires in (\d+) day/.exec(message)?.[1]);
    expect(daysInMessages).toEqual(['30', '14', '7', '1']);
    for (const message of warnings()) {
      expect(message).toMatch(/register the certificate on the system integration/);
      expect(message).toMatch(/rotateCredentials/);
    }
    clock.advance(2 * DAY);
    expect(warnings().at(-1)).toMatch(/expired on/);
    expect(warnings()).toHaveLength(5);
    monitor.stop();
  });

  it('warns at start-up when already inside a threshold, and then only at the next one', async () => {
    const { clock, warnings, monitor } = await startMonitor(10);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatch(/expires in 10 day\(s\)/);
    clock.advance(2 * DAY); // 8 days left: still the 14-day stage
    expect(warnings()).toHaveLength(1);
    clock.advance(1 * DAY + 1); // just under 7 days
    expect(warnings()).toHaveLength(2);
    expect(warnings()[1]).toMatch(/expires in 6 day\(s\)/);
    monitor.stop();
  });

  it('wakes by the clock, not by polling: one pending timer, none after stop', async () => {
    const { clock, monitor } = await startMonitor(400);
    expect(clock.pendingTimers).toBe(1);
    monitor.stop();
    expect(clock.pendingTimers).toBe(0);
    clock.advance(400 * DAY);
  });

  it('starts over for a new certificate swapped in', async () => {
    const { clock, holder, warnings, monitor } = await startMonitor(5);
    expect(warnings()).toHaveLength(1);
    holder.active = { machineId: 'machine', credentials: await loaded(clock.now(), 365), activatedAtMs: clock.now() };
    monitor.currentChanged();
    clock.advance(10 * DAY);
    expect(warnings()).toHaveLength(1);
    clock.advance(330 * DAY); // 25 days left on the new certificate
    expect(warnings()).toHaveLength(2);
    expect(warnings()[1]).toMatch(/expires in 2[45] day/);
    monitor.stop();
  });

  it('says the same days left at start-up as the monitor: 6 at 6.6 days, never more than there are', async () => {
    const now = Date.UTC(2026, 0, 1);
    const pem = await createTestCredentials({ notBefore: new Date(now - DAY), notAfter: new Date(now + 6.6 * DAY) });
    const report = new ConfigReport();
    const credentials = loadCredentials(
      { privateKey: pem.privateKeyPem, certificate: pem.certificatePem, names: pairNames('key') },
      now,
      report,
    );
    expect(report.warnings.map((warning) => warning.message)).toEqual([expect.stringMatching(/^expires in 6 days /)]);

    const clock = new FakeClock(now);
    const logger = new RecordingLogger();
    const holder = { active: { machineId: 'machine', credentials: credentials!, activatedAtMs: now } };
    const monitor = new CertificateExpiryMonitor(
      clock,
      holder,
      PlatformAuthTelemetry.channelOnly('abc', clock),
      logger,
    );
    monitor.start();
    expect(logger.messages('warn')).toEqual([expect.stringMatching(/expires in 6 day\(s\)/)]);
    monitor.stop();
  });
});
