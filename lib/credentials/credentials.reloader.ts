import { createHash } from 'node:crypto';
import type { LoggerService } from '@nestjs/common';
import { scheduleOn, type Clock } from '../platform-auth.clock.js';
import { ConfigReport, type SettingNames } from '../options/config.report.js';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import type { TokenProviderStatus } from '../token/token-status.types.js';
import { readCredentialFile, readCredentialFileSync, type CredentialFileRead } from './credential-file.reader.js';
import { loadCredentials, type CredentialSources } from './credentials.loader.js';
import type { ReloadedPairs } from './active-credentials.js';
import { loadNextCredentials } from './next-credentials.loader.js';

/** Where file-based credentials stand; part of `TokenProvider.status()`. */
export type CredentialReloadStatus = TokenProviderStatus['credentials']['reload'];

type ReloadOutcome = 'unchanged' | 'unreadable' | 'reloaded' | 'rejected';

/** Checks in a row that may find a file missing before it is reported: a secret volume swap takes a moment. */
const UNREADABLE_CHECKS_BEFORE_WARNING = 3;

/** What the watched files hold now: their text by path and a hash of it, or why they cannot be used. */
type FilesRead =
  | { readonly kind: 'read'; readonly fingerprint: string; readonly files: ReadonlyMap<string, string> }
  /** One file cannot be read yet (a secret volume mid-swap). */
  | { readonly kind: 'missing' }
  /** Every file of the pair is gone (only the next pair may be removed this way). */
  | { readonly kind: 'absent'; readonly fingerprint: 'absent' }
  | { readonly kind: 'refused'; readonly fingerprint: string; readonly problems: readonly ConfigProblemLike[] };

interface ConfigProblemLike {
  readonly option: string;
  readonly message: string;
}

/**
 * Re-reads `key.privateKeyPath` / `key.certificatePath` (and the next pair's `next.privateKeyPath` / `next.certificatePath`)
 * every `intervalMs` and, when their content changed, runs every start-up check on the new pair and hands it to the
 * credential lifecycle, which decides whether it is put in use (the next pair: in place as the next one; files
 * removed: no next pair). A pair that is invalid (a half-written file, a key without its certificate yet) or that
 * the lifecycle refuses is reported and the last good pair kept; the next change is checked again. Files are read
 * asynchronously, and only regular files of bounded size: a FIFO, a device or a huge file put at the path is refused
 * from its metadata, never waited on or read whole.
 */
export class CredentialsReloader {
  private fingerprint?: string;
  private nextFingerprint?: string;
  private currentProblems: readonly string[] = [];
  private nextProblems: readonly string[] = [];
  private unreadableChecks = 0;
  private cancelTimer?: () => void;
  private stopped = false;
  /** The check in progress: checks run one at a time. */
  private running: Promise<unknown> = Promise.resolve();
  private state: CredentialReloadStatus;

  /** `names`: how the configuration's settings are named, as at start-up (a named integration's variables, say). */
  constructor(
    private readonly sources: CredentialSources,
    private readonly intervalMs: number | undefined,
    private readonly clock: Clock,
    private readonly pairs: ReloadedPairs,
    private readonly observer: PlatformAuthObserver,
    private readonly logger: LoggerService,
    private readonly names: SettingNames,
    private readonly nextSources?: CredentialSources,
  ) {
    this.state = this.enabled ? { state: 'watching', intervalMs } : { state: 'off' };
  }

  /** Configured with an interval and at least one file to watch. */
  get enabled(): boolean {
    return this.intervalMs !== undefined && (paths(this.sources).length > 0 || paths(this.nextSources).length > 0);
  }

  status(): CredentialReloadStatus {
    return this.state;
  }

  /** Remembers what the files hold now (they were validated at start-up) and starts the timer. */
  start(): void {
    if (!this.enabled || this.stopped) return;
    // What start-up validated, read again at once (bounded, regular files only) so a change right after counts.
    const readSync = (path: string): CredentialFileRead => {
      try {
        return readCredentialFileSync(path);
      } catch {
        return { ok: false, kind: 'missing', message: '' };
      }
    };
    const current = readPair(this.sources, readSync, false);
    if (current.kind !== 'missing') this.fingerprint = current.fingerprint;
    const next = readPair(this.nextSources, readSync, true);
    if (next.kind !== 'missing') this.nextFingerprint = next.fingerprint;
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

  /** One check, as the timer runs it; checks run one at a time. The outcome is the current pair's. */
  check(): Promise<ReloadOutcome> {
    const run = this.running.catch(() => undefined).then(() => this.checkNow());
    this.running = run;
    return run;
  }

  private async checkNow(): Promise<ReloadOutcome> {
    const current = await readPairAsync(this.sources, false);
    const next = this.nextSources ? await readPairAsync(this.nextSources, true) : undefined;
    const now = this.clock.now();
    this.state = { ...this.state, lastCheckAt: new Date(now) };
    const outcome = this.checkCurrent(current, now);
    if (next) this.checkNext(next, now);
    return outcome;
  }

  private checkCurrent(read: FilesRead, now: number): ReloadOutcome {
    if (read.kind === 'missing' || read.kind === 'absent') {
      this.unreadableChecks += 1;
      if (this.unreadableChecks === UNREADABLE_CHECKS_BEFORE_WARNING) {
        this.logger.warn(
          `Credential files have been unreadable for ${UNREADABLE_CHECKS_BEFORE_WARNING} checks; the last good pair stays in use.`,
        );
      }
      return 'unreadable';
    }
    this.unreadableChecks = 0;
    if (read.fingerprint === this.fingerprint) return 'unchanged';
    this.fingerprint = read.fingerprint;

    const report = ConfigReport.naming(this.names);
    if (read.kind === 'refused') for (const problem of read.problems) report.problem(problem.option, problem.message);
    const loaded = read.kind === 'read' ? loadCredentials(this.sources, now, report, read.files) : undefined;
    const refusal = loaded && this.pairs.reloaded(loaded);
    if (refusal) report.problem(pathOption(this.sources), refusal);
    this.currentProblems = problemLines(report);
    if (report.problems.length > 0) {
      this.publishState();
      this.logger.error(
        `Changed credential files were refused; the last good pair (thumbprint ${this.pairs.active.credentials.thumbprint}) stays in use:\n  - ${this.currentProblems.join('\n  - ')}`,
      );
      this.observer.credentialsChanged('rejected');
      return 'rejected';
    }
    for (const warning of report.warnings) this.logger.warn(`${warning.setting}: ${warning.message}`);
    this.reloadedAt(now);
    return 'reloaded';
  }

  private checkNext(read: FilesRead, now: number): void {
    if (read.kind === 'missing' || read.fingerprint === this.nextFingerprint) return;
    this.nextFingerprint = read.fingerprint;
    const report = ConfigReport.naming(this.names);
    if (read.kind === 'refused') for (const problem of read.problems) report.problem(problem.option, problem.message);
    const loaded =
      read.kind === 'read'
        ? loadNextCredentials(this.nextSources!, this.pairs.active.credentials, now, report, read.files)
        : undefined;
    if (read.kind === 'absent' || loaded) {
      const refusal = this.pairs.nextReloaded(loaded);
      if (refusal) report.problem(pathOption(this.nextSources!), refusal);
    }
    this.nextProblems = problemLines(report);
    if (report.problems.length > 0) {
      this.publishState();
      const next = this.pairs.next;
      this.logger.error(
        `Changed files of the next pair were refused; ${next ? `the next pair stays thumbprint ${next.thumbprint}` : 'there is no next pair'}:\n  - ${this.nextProblems.join('\n  - ')}`,
      );
      this.observer.credentialsChanged('rejected');
      return;
    }
    for (const warning of report.warnings) this.logger.warn(`${warning.setting}: ${warning.message}`);
    if (loaded) this.reloadedAt(now);
    else this.publishState();
  }

  private reloadedAt(now: number): void {
    this.state = { ...this.state, lastReloadAt: new Date(now) };
    this.publishState();
  }

  private publishState(): void {
    const problems = [...this.currentProblems, ...this.nextProblems];
    const { lastCheckAt, lastReloadAt } = this.state;
    this.state =
      problems.length > 0
        ? { state: 'rejected', intervalMs: this.intervalMs, lastCheckAt, lastReloadAt, problems }
        : { state: 'watching', intervalMs: this.intervalMs, lastCheckAt, lastReloadAt };
  }

  private arm(): void {
    this.cancelTimer = scheduleOn(this.clock, this.intervalMs!, () => {
      if (this.stopped) return;
      void this.check().finally(() => {
        if (!this.stopped) this.arm();
      });
    });
  }
}

function paths(sources: CredentialSources | undefined): string[] {
  return [sources?.privateKeyPath, sources?.certificatePath].filter((path) => path !== undefined);
}

/** The option that names a pair's files in a problem about the pair itself: its certificate's, when watched. */
function pathOption(sources: CredentialSources): string {
  return sources.certificatePath !== undefined ? sources.names.certificatePath : sources.names.privateKeyPath;
}

function problemLines(report: ConfigReport): string[] {
  return report.problems.map((problem) => `${problem.setting}: ${problem.message}`);
}

/**
 * The pair as it is on disk, read twice: the files of a pair are read one after the other, so a secret update in
 * between would pair an old key with a new certificate. Two reads that differ mean the files are changing: `missing`
 * for now, and the next check reads them again.
 */
async function readPairAsync(sources: CredentialSources | undefined, isNext: boolean): Promise<FilesRead> {
  const readOnce = async (): Promise<FilesRead> => {
    const reads = new Map<string, CredentialFileRead>();
    for (const path of paths(sources)) reads.set(path, await readCredentialFile(path));
    return readPair(sources, (path) => reads.get(path)!, isNext);
  };
  const first = await readOnce();
  if (first.kind === 'missing') return first;
  const second = await readOnce();
  return second.kind !== 'missing' && second.fingerprint === first.fingerprint ? first : { kind: 'missing' };
}

/**
 * The pair's files' text and a hash of their bytes (symlinks followed, as a secret volume's `..data` swap needs);
 * `missing` when one cannot be read yet; `absent` when every file of a next pair is gone; `refused` when one is
 * not a regular file of bounded size.
 */
function readPair(
  sources: CredentialSources | undefined,
  readFile: (path: string) => CredentialFileRead,
  isNext: boolean,
): FilesRead {
  const options = sources
    ? ([
        [sources.names.privateKeyPath, sources.privateKeyPath, 'private key'],
        [sources.names.certificatePath, sources.certificatePath, 'certificate'],
      ] as const)
    : [];
  const hash = createHash('sha256');
  const files = new Map<string, string>();
  const problems: ConfigProblemLike[] = [];
  let missing = 0;
  let watched = 0;
  for (const [option, path, what] of options) {
    if (path === undefined) continue;
    watched += 1;
    const read = readFile(path);
    if (read.ok) {
      hash.update(read.bytes).update('\0');
      files.set(path, read.bytes.toString('utf8'));
    } else if (read.kind === 'refused') {
      hash.update(read.message).update('\0');
      problems.push({ option, message: `${what} file ${read.message}` });
    } else {
      missing += 1;
    }
  }
  if (problems.length > 0) return { kind: 'refused', fingerprint: `refused:${hash.digest('hex')}`, problems };
  if (isNext && watched > 0 && missing === watched) return { kind: 'absent', fingerprint: 'absent' };
  if (missing > 0) return { kind: 'missing' };
  return { kind: 'read', fingerprint: hash.digest('hex'), files };
}
