import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { LoggerService } from '@nestjs/common';
import { scheduleOn, type Clock } from '../platform-auth.clock.js';
import { ConfigReport } from '../options/config.report.js';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import { loadCredentials, type CredentialSources } from './credentials.loader.js';
import type { CredentialsHolder } from './credentials.holder.js';

/** Where file-based credentials stand; part of `TokenProvider.status()`. */
export interface CredentialReloadStatus {
  /** `off`: not configured; `watching`: the files in use are the newest valid ones; `rejected`: see `problems`. */
  readonly state: 'off' | 'watching' | 'rejected';
  readonly intervalMs?: number;
  readonly lastCheckAt?: Date;
  /** When changed files were last put in use. */
  readonly lastReloadAt?: Date;
  /** Why the newest files were refused; the last good pair stays in use. Settings and paths only, never content. */
  readonly problems?: readonly string[];
}

export type ReloadOutcome = 'unchanged' | 'unreadable' | 'reloaded' | 'rejected';

/** Checks in a row that may find a file missing before it is reported: a secret volume swap takes a moment. */
const UNREADABLE_CHECKS_BEFORE_WARNING = 3;

/**
 * Re-reads `privateKeyPath` / `certificatePath` every `intervalMs` and, when their content changed, runs every
 * start-up check on the new pair and swaps it in. An invalid pair (a half-written file, a key without its
 * certificate yet) is refused and the last good pair kept; the next change is checked again.
 */
export class CredentialsReloader {
  private fingerprint?: string;
  private unreadableChecks = 0;
  private cancelTimer?: () => void;
  private stopped = false;
  private state: CredentialReloadStatus;

  constructor(
    private readonly sources: CredentialSources,
    private readonly intervalMs: number | undefined,
    private readonly clock: Clock,
    private readonly holder: CredentialsHolder,
    private readonly observer: PlatformAuthObserver,
    private readonly logger: LoggerService,
  ) {
    this.state = this.enabled ? { state: 'watching', intervalMs } : { state: 'off' };
  }

  /** Configured with an interval and at least one file to watch. */
  get enabled(): boolean {
    return this.intervalMs !== undefined && this.paths().length > 0;
  }

  status(): CredentialReloadStatus {
    return this.state;
  }

  /** Remembers what the files hold now (they were validated at start-up) and starts the timer. */
  start(): void {
    if (!this.enabled || this.stopped) return;
    this.fingerprint = this.readFingerprint();
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    this.cancelTimer?.();
  }

  /** One check, as the timer runs it. */
  check(): ReloadOutcome {
    const now = this.clock.now();
    const fingerprint = this.readFingerprint();
    if (fingerprint === undefined) {
      this.unreadableChecks += 1;
      if (this.unreadableChecks === UNREADABLE_CHECKS_BEFORE_WARNING) {
        this.logger.warn(
          `Credential files have been unreadable for ${UNREADABLE_CHECKS_BEFORE_WARNING} checks; the last good pair stays in use.`,
        );
      }
      this.state = { ...this.state, lastCheckAt: new Date(now) };
      return 'unreadable';
    }
    this.unreadableChecks = 0;
    this.state = { ...this.state, lastCheckAt: new Date(now) };
    if (fingerprint === this.fingerprint) return 'unchanged';
    this.fingerprint = fingerprint;

    const report = new ConfigReport();
    const loaded = loadCredentials(this.sources, now, report);
    if (!loaded) {
      const problems = report.problems.map((problem) => `${problem.setting}: ${problem.message}`);
      this.state = { ...this.state, state: 'rejected', problems };
      this.logger.error(
        `Changed credential files were refused; the last good pair (thumbprint ${this.holder.active.credentials.thumbprint}) stays in use:\n  - ${problems.join('\n  - ')}`,
      );
      this.observer.credentialsChanged('rejected');
      return 'rejected';
    }
    for (const warning of report.warnings) this.logger.warn(`${warning.setting}: ${warning.message}`);
    const previous = this.holder.active.credentials.thumbprint;
    this.holder.swap(this.holder.active.machineId, loaded, now);
    this.state = {
      state: 'watching',
      intervalMs: this.intervalMs,
      lastCheckAt: new Date(now),
      lastReloadAt: new Date(now),
    };
    this.logger.log(
      `Credentials reloaded from files: assertions now carry thumbprint ${loaded.thumbprint} (was ${previous}); the cached token is used until it expires.`,
    );
    this.observer.credentialsChanged('reloaded');
    return 'reloaded';
  }

  private arm(): void {
    this.cancelTimer = scheduleOn(this.clock, this.intervalMs!, () => {
      if (this.stopped) return;
      this.check();
      this.arm();
    });
  }

  private paths(): string[] {
    return [this.sources.privateKeyPath, this.sources.certificatePath].filter((path) => path !== undefined);
  }

  /** A hash of the files' bytes (symlinks followed, as a secret volume's `..data` swap needs), or `undefined`. */
  private readFingerprint(): string | undefined {
    const hash = createHash('sha256');
    try {
      for (const path of this.paths()) hash.update(readFileSync(path)).update('\0');
    } catch {
      return undefined;
    }
    return hash.digest('hex');
  }
}
