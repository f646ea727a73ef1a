import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import type { CredentialSources } from './credentials.loader.js';
import { CertificateExpiryMonitor } from './certificate-expiry.monitor.js';
import type { CredentialsHolder } from './credentials.holder.js';
import { CredentialsReloader, type CredentialReloadStatus } from './credentials.reloader.js';

/** The background work on credentials: the certificate expiry monitor and the file reloader. */
export class CredentialsWatch {
  private readonly reloader: CredentialsReloader;
  private readonly monitor: CertificateExpiryMonitor;

  constructor(
    sources: CredentialSources,
    reloadIntervalMs: number | undefined,
    clock: Clock,
    holder: CredentialsHolder,
    observer: PlatformAuthObserver,
    logger: LoggerService,
    nextSources?: CredentialSources,
    filesCaughtUp?: () => void,
  ) {
    this.reloader = new CredentialsReloader(sources, reloadIntervalMs, clock, holder, observer, logger, {
      nextSources,
      filesCaughtUp,
    });
    this.monitor = new CertificateExpiryMonitor(clock, holder, observer, logger);
  }

  reloadStatus(): CredentialReloadStatus {
    return this.reloader.status();
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
