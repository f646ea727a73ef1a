import { createHash } from 'node:crypto';
import type { LoggerService } from '@nestjs/common';
import { scheduleOn, type Clock } from '../platform-auth.clock.js';
import { ConfigReport } from '../options/config.report.js';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import { readCredentialFile, readCredentialFileSync, type CredentialFileRead } from './credential-file.reader.js';
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

/** What the watched files hold now: their text by path and a hash of it, or why they cannot be used. */
type FilesRead =
  | { readonly kind: 'read'; readonly fingerprint: string; readonly files: ReadonlyMap<string, string> }
  | { readonly kind: 'missing' }
  | { readonly kind: 'refused'; readonly fingerprint: string; readonly problems: readonly ConfigProblemLike[] };

interface ConfigProblemLike {
  readonly option: string;
  readonly message: string;
}

/**
 * Re-reads `privateKeyPath` / `certificatePath` every `intervalMs` and, when their content changed, runs every
 * start-up check on the new pair and swaps it in. An invalid pair (a half-written file, a key without its
 * certificate yet) is refused and the last good pair kept; the next change is checked again. Files are read
 * asynchronously, and only regular files of bounded size: a FIFO, a device or a huge file put at the path is
 * refused from its metadata, never waited on or read whole.
 */
export class CredentialsReloader {
  private fingerprint?: string;
  private unreadableChecks = 0;
  private cancelTimer?: () => void;
  private stopped = false;
  /** The check in progress (or the first read of the files): checks run one at a time. */
  private running: Promise<unknown> = Promise.resolve();
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
    // What start-up validated, read again at once (bounded, regular files only) so a change right after counts.
    const read = this.readFilesWith((path) => {
      try {
        return readCredentialFileSync(path);
      } catch {
        return { ok: false, kind: 'missing', message: '' };
      }
    });
    if (read.kind !== 'missing') this.fingerprint = read.fingerprint;
    this.arm();
  }

  /** Resolves once the check in progress (if any) has finished: for tests that advance a fake clock. */
  async settled(): Promise<void> {
    await this.running.catch(() => undefined);
  }

  stop(): void {
    this.stopped = true;
    this.cancelTimer?.();
  }

  /** One check, as the timer runs it; checks run one at a time. */
  check(): Promise<ReloadOutcome> {
    const run = this.running.catch(() => undefined).then(() => this.checkNow());
    this.running = run;
    return run;
  }

  private async checkNow(): Promise<ReloadOutcome> {
    const read = await this.readFiles();
    const now = this.clock.now();
    if (read.kind === 'missing') {
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
    if (read.fingerprint === this.fingerprint) return 'unchanged';
    this.fingerprint = read.fingerprint;

    const report = new ConfigReport();
    if (read.kind === 'refused') for (const problem of read.problems) report.problem(problem.option, problem.message);
    const loaded = read.kind === 'read' ? loadCredentials(this.sources, now, report, read.files) : undefined;
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
      void this.check().finally(() => {
        if (!this.stopped) this.arm();
      });
    });
  }

  private paths(): string[] {
    return [this.sources.privateKeyPath, this.sources.certificatePath].filter((path) => path !== undefined);
  }

  /**
   * The watched files' text and a hash of their bytes (symlinks followed, as a secret volume's `..data` swap needs);
   * `missing` when one cannot be read yet; `refused` when one is not a regular file of bounded size.
   */
  private async readFiles(): Promise<FilesRead> {
    const reads = new Map<string, CredentialFileRead>();
    for (const path of this.paths()) reads.set(path, await readCredentialFile(path));
    return this.readFilesWith((path) => reads.get(path)!);
  }

  private readFilesWith(readFile: (path: string) => CredentialFileRead): FilesRead {
    const options = [
      ['privateKeyPath', this.sources.privateKeyPath, 'private key'],
      ['certificatePath', this.sources.certificatePath, 'certificate'],
    ] as const;
    const hash = createHash('sha256');
    const files = new Map<string, string>();
    const problems: ConfigProblemLike[] = [];
    let missing = false;
    for (const [option, path, what] of options) {
      if (path === undefined) continue;
      const read = readFile(path);
      if (read.ok) {
        hash.update(read.bytes).update('\0');
        files.set(path, read.bytes.toString('utf8'));
      } else if (read.kind === 'refused') {
        hash.update(read.message).update('\0');
        problems.push({ option, message: `${what} file ${read.message}` });
      } else {
        missing = true;
      }
    }
    if (problems.length > 0) return { kind: 'refused', fingerprint: `refused:${hash.digest('hex')}`, problems };
    if (missing) return { kind: 'missing' };
    return { kind: 'read', fingerprint: hash.digest('hex'), files };
  }
}
