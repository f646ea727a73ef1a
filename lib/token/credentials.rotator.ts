import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import { loadCredentials } from '../credentials/credentials.loader.js';
import { pairNames } from '../credentials/key-pair.sources.js';
import { BY_OPTION, ConfigReport } from '../options/config.report.js';
import { checkMachineId } from '../options/options.resolver.js';
import { CredentialRotationError } from '../platform-auth.errors.js';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import type { CredentialsLifecycle } from './credentials.lifecycle.js';
import type { TokenExchangeAttempts } from './token-exchange.attempts.js';
import type { ExchangeOutcome, TokenCache } from './token.cache.js';

/** A new pair from a secrets manager, as PEM text. */
export interface RotateCredentialsInput {
  privateKey: string;
  certificate: string;
  /** For a cut-over to another system integration; default: the machineId in use. */
  machineId?: string;
  privateKeyPassphrase?: string;
}

/** Wraps one exchange the way every exchange is observed (telemetry's `recordExchange`). */
interface ExchangeRecorder {
  recordExchange<T extends ExchangeOutcome>(run: () => Promise<T>): Promise<T>;
}

interface CredentialsRotatorOptions {
  readonly clock: Clock;
  readonly credentials: CredentialsLifecycle;
  /** The module's exchange: the test exchange is made exactly as any other (retries, clock-skew correction). */
  readonly attempts: Pick<TokenExchangeAttempts, 'run'>;
  readonly recorder: ExchangeRecorder;
  readonly cache: Pick<TokenCache, 'current' | 'invalidate'>;
  readonly observer: PlatformAuthObserver;
  readonly logger: LoggerService;
  /** A shared token store is configured: the fleet shares tokens by integration, so the machineId must not change. */
  readonly sharedStore: boolean;
  readonly shutdown: AbortSignal;
}

/**
 * `rotateCredentials()`: every start-up check on the new pair and the machineId, then one exchange signed with it
 * (transient failures retried like any exchange), and only then the lifecycle's `rotate` transition. Rotations run
 * one at a time.
 */
export class CredentialsRotator {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: CredentialsRotatorOptions) {}

  rotate(input: RotateCredentialsInput): Promise<void> {
    const run = this.queue.then(() => this.rotateNow(input));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async rotateNow(input: RotateCredentialsInput): Promise<void> {
    const { clock, credentials: lifecycle, observer, logger, shutdown } = this.options;
    shutdown.throwIfAborted();
    const report = ConfigReport.naming(BY_OPTION);
    const given = (input as Partial<RotateCredentialsInput> | undefined) ?? {};
    const inUse = lifecycle.active;
    const machineId = given.machineId ?? inUse.machineId;
    checkMachineId(machineId, report);
    if (report.problems.length === 0 && this.options.sharedStore && machineId !== inUse.machineId) {
      // One replica moving to another integration would hand its tokens to replicas still on the old one. Such a
      // cut-over is a named integration beside this one, or a redeploy.
      report.problem('machineId', 'changes the integration while a shared token store is configured; not supported');
    }
    const { privateKey, certificate, privateKeyPassphrase } = given;
    const thumbprintAlgorithm = inUse.credentials.thumbprintAlgorithm;
    const names = pairNames('key');
    const sources = { privateKey, certificate, passphrase: privateKeyPassphrase, names, thumbprintAlgorithm };
    const credentials = loadCredentials(sources, clock.now(), report);
    const refusal = credentials && lifecycle.refusal(credentials);
    if (refusal) report.problem(names.certificate, refusal);
    if (!credentials || report.problems.length > 0) {
      observer.credentialsChanged('rotation_failed');
      throw new CredentialRotationError(
        `credential rotation refused: the new credentials failed validation (${report.problems.length} problem(s)); nothing changed: ${report.problems.map((p) => `${p.setting}: ${p.message}`).join('; ')}`,
        'validation',
        report.problems,
      );
    }
    const signers = lifecycle.candidateSigners(machineId, credentials);
    const outcome = await this.options.recorder.recordExchange(() => this.options.attempts.run(shutdown, signers));
    if (!outcome.ok) {
      observer.credentialsChanged('rotation_failed');
      throw new CredentialRotationError(
        `the platform did not accept the new credentials (thumbprint ${credentials.thumbprint}); nothing changed: ${outcome.error.message}`,
        'exchange',
        [],
        outcome.error,
      );
    }
    for (const warning of report.warnings) logger.warn(`${warning.setting}: ${warning.message}`);
    const integrationChanged = lifecycle.rotated(machineId, credentials);
    // A token belongs to the integration it was issued to: after a cut-over to another machineId it is not used.
    const token = this.options.cache.current;
    if (integrationChanged && token) this.options.cache.invalidate(token.accessToken);
  }
}
