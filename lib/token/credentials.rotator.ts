import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import { CredentialsHolder } from '../credentials/credentials.holder.js';
import { loadCredentials } from '../credentials/credentials.loader.js';
import { ConfigReport } from '../options/config.report.js';
import type { ResolvedPlatformAuthConfig } from '../options/options.resolver.js';
import { CredentialRotationError } from '../platform-auth.errors.js';
import type { PlatformAuthTelemetry } from '../telemetry/telemetry.service.js';
import { AssertionSigner } from './assertion.signer.js';
import type { TokenExchangeClient } from './token-exchange.client.js';
import { TokenExchangeAttempts } from './token-exchange.attempts.js';

/** A new pair from a secrets manager, as PEM text. */
export interface RotateCredentialsInput {
  privateKey: string;
  certificate: string;
  /** For a cut-over to another system integration; default: the machineId in use. */
  machineId?: string;
  privateKeyPassphrase?: string;
}

/**
 * `rotateCredentials()`: every start-up check on the new pair, then one exchange signed with it (transient
 * failures retried like any exchange), and only then the swap. Rotations run one at a time.
 */
export class CredentialsRotator {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly config: ResolvedPlatformAuthConfig,
    private readonly clock: Clock,
    private readonly holder: CredentialsHolder,
    private readonly client: TokenExchangeClient,
    private readonly telemetry: PlatformAuthTelemetry,
    private readonly logger: LoggerService,
  ) {}

  rotate(input: RotateCredentialsInput, signal: AbortSignal): Promise<void> {
    const run = this.queue.then(() => this.rotateNow(input, signal));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async rotateNow(input: RotateCredentialsInput, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    const report = new ConfigReport();
    const machineId = input.machineId ?? this.holder.active.machineId;
    if (typeof machineId !== 'string' || machineId.trim() === '') report.problem('machineId', 'is empty');
    const { privateKey, certificate, privateKeyPassphrase } = input;
    const thumbprintAlgorithm = this.holder.active.credentials.thumbprintAlgorithm;
    const sources = { privateKey, certificate, privateKeyPassphrase, thumbprintAlgorithm };
    const credentials = loadCredentials(sources, this.clock.now(), report);
    if (!credentials || report.problems.length > 0) {
      this.telemetry.credentialsChanged('rotation_failed');
      throw new CredentialRotationError(
        `the new credentials failed validation (${report.problems.length} problem(s)); nothing changed: ${report.problems.map((p) => `${p.setting}: ${p.message}`).join('; ')}`,
        'validation',
        report.problems,
      );
    }
    const candidate = new CredentialsHolder(machineId, credentials, this.clock.now());
    const signer = new AssertionSigner(this.config, this.clock, candidate);
    const attempts = new TokenExchangeAttempts(this.config, this.clock, signer, this.client, this.logger);
    const outcome = await this.telemetry.recordExchange(() => attempts.run(signal));
    if (!outcome.ok) {
      this.telemetry.credentialsChanged('rotation_failed');
      throw new CredentialRotationError(
        `the platform did not accept the new credentials (thumbprint ${credentials.thumbprint}); nothing changed: ${outcome.error.message}`,
        'exchange',
        [],
        outcome.error,
      );
    }
    const previous = this.holder.active.credentials.thumbprint;
    this.holder.swap(machineId, credentials, this.clock.now());
    for (const warning of report.warnings) this.logger.warn(`${warning.setting}: ${warning.message}`);
    this.logger.log(
      `Credentials rotated: assertions now carry thumbprint ${credentials.thumbprint} (was ${previous}); the cached token is used until it expires.`,
    );
    this.telemetry.credentialsChanged('rotated');
  }
}
