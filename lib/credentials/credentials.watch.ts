import { Inject, Injectable, type LoggerService, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import { PLATFORM_AUTH_CLOCK, PLATFORM_AUTH_CONFIG, PLATFORM_AUTH_LOGGER } from '../platform-auth.constants.js';
import type { ResolvedPlatformAuthConfig } from '../options/options.resolver.js';
import { PlatformAuthTelemetry } from '../telemetry/telemetry.service.js';
import { CertificateExpiryMonitor } from './certificate-expiry.monitor.js';
import { CredentialsHolder } from './credentials.holder.js';
import { CredentialsReloader, type CredentialReloadStatus } from './credentials.reloader.js';

/** The module's background work on credentials: the certificate expiry monitor and the file reloader. */
@Injectable()
export class CredentialsWatch implements OnModuleInit, OnModuleDestroy {
  private readonly reloader: CredentialsReloader;
  private readonly monitor: CertificateExpiryMonitor;

  constructor(
    @Inject(PLATFORM_AUTH_CONFIG) config: ResolvedPlatformAuthConfig,
    @Inject(PLATFORM_AUTH_CLOCK) clock: Clock,
    holder: CredentialsHolder,
    telemetry: PlatformAuthTelemetry,
    @Inject(PLATFORM_AUTH_LOGGER) logger: LoggerService,
  ) {
    this.reloader = new CredentialsReloader(
      config.credentialSources,
      config.credentialsReloadIntervalMs,
      clock,
      holder,
      telemetry,
      logger,
    );
    this.monitor = new CertificateExpiryMonitor(clock, holder, telemetry, logger);
  }

  reloadStatus(): CredentialReloadStatus {
    return this.reloader.status();
  }

  onModuleInit(): void {
    this.monitor.start();
    this.reloader.start();
  }

  onModuleDestroy(): void {
    this.stop();
  }

  stop(): void {
    this.monitor.stop();
    this.reloader.stop();
  }
}
