import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import type { SettingNames } from '../options/config.report.js';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import type { CredentialSources } from './credentials.loader.js';
import type { ReloadedPairs } from './active-credentials.js';
import { CertificateExpiryMonitor } from './certificate-expiry.monitor.js';
import { CredentialsReloader, type CredentialReloadStatus } from './credentials.reloader.js';

/** Where the watched files are, how often they are read, and how the problems of a reload name their settings. */
export interface WatchedFiles {
  readonly sources: CredentialSources;
  readonly nextSources?: CredentialSources;
  readonly reloadIntervalMs?: number;
  readonly names: SettingNames;
}

/** The background work on credentials: the certificate expiry monitor and the file reloader. */
export class CredentialsWatch {
  private readonly reloader: CredentialsReloader;
  private readonly monitor: CertificateExpiryMonitor;

  constructor(
    files: WatchedFiles,
    pairs: ReloadedPairs,
    clock: Clock,
    observer: PlatformAuthObserver,
    logger: LoggerService,
  ) {
    const { sources, nextSources, reloadIntervalMs, names } = files;
    this.reloader = new CredentialsReloader(
      sources,
      reloadIntervalMs,
      clock,
      pairs,
      observer,
      logger,
      names,
      nextSources,
    );
    this.monitor = new CertificateExpiryMonitor(clock, pairs, observer, logger);
  }

  reloadStatus(): CredentialReloadStatus {
    return this.reloader.status();
  }

  /** Another pair is in use. */
  currentChanged(): void {
    this.monitor.currentChanged();
  }

  start(): void {
    this.monitor.start();
    this.reloader.start();
  }

  stop(): void {
    this.monitor.stop();
    this.reloader.stop();
  }
}
