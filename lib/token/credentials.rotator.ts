import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import { CredentialsHolder } from '../credentials/credentials.holder.js';
import { loadCredentials } from '../credentials/credentials.loader.js';
import { ConfigReport } from '../options/config.report.js';
import { checkMachineId } from '../options/options.resolver.js';
import { CredentialRotationError } from '../platform-auth.errors.js';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import type { ExchangeOutcome } from './token.cache.js';

/** A new pair from a secrets manager, as PEM text. */
export interface RotateCredentialsInput {
  privateKey: string;
  certificate: string;
  /** For a cut-over to another system integration; default: the machineId in use. */
  machineId?: string;
  privateKeyPassphrase?: string;
}

/** One exchange signed with `candidate`'s credentials, made exactly as the module makes any (retries included). */
export type CandidateExchange = (candidate: CredentialsHolder, signal: AbortSignal) => Promise<ExchangeOutcome>;

export interface CredentialsRotatorOptions {
  readonly clock: Clock;
  readonly holder: CredentialsHolder;
  readonly exchangeWith: CandidateExchange;
  readonly observer: PlatformAuthObserver;
  readonly logger: LoggerService;
  /** A shared token store is configured: the fleet shares tokens by integration, so the machineId must not change. */
  readonly sharedStore: boolean;
  readonly shutdown: AbortSignal;
}

/**
 * `rotateCredentials()`: every start-up check on the new pair and the machineId, then one exchange signed with it
 * (transient failures retried like any exchange), and only then the swap. Rotations run one at a time.
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
    const { clock, holder, observer, logger, shutdown } = this.options;
    shutdown.throwIfAborted();
    const report = new ConfigReport();
    const given = (input as Partial<RotateCredentialsInput> | undefined) ?? {};
    const machineId = given.machineId ?? holder.active.machineId;
    checkMachineId(machineId, report);
    if (report.problems.length === 0 && this.options.sharedStore && machineId !== holder.active.machineId) {
      // One replica moving to another integration would hand its tokens to replicas still on the old one. Such a
      // cut-over is a named integration beside this one, or a redeploy.
      report.problem('machineId', 'changes the integration while a shared token store is configured; not supported');
    }
    const { privateKey, certificate, privateKeyPassphrase } = given;
    const thumbprintAlgorithm = holder.active.credentials.thumbprintAlgorithm;
    const sources = { privateKey, certificate, privateKeyPassphrase, thumbprintAlgorithm };
    const credentials = loadCredentials(sources, clock.now(), report);
    if (!credentials || report.problems.length > 0) {
      observer.credentialsChanged('rotation_failed');
      throw new CredentialRotationError(
        `credential rotation refused: the new credentials failed validation (${report.problems.length} problem(s)); nothing changed: ${report.problems.map((p) => `${p.setting}: ${p.message}`).join('; ')}`,
        'validation',
        report.problems,
      );
    }
    const candidate = new CredentialsHolder(machineId, credentials, clock.now());
    const outcome = await this.options.exchangeWith(candidate, shutdown);
    if (!outcome.ok) {
      observer.credentialsChanged('rotation_failed');
      throw new CredentialRotationError(
        `the platform did not accept the new credentials (thumbprint ${credentials.thumbprint}); nothing changed: ${outcome.error.message}`,
        'exchange',
        [],
        outcome.error,
      );
    }
    const previous = holder.active.credentials.thumbprint;
    holder.swap(machineId, credentials, clock.now());
    for (const warning of report.warnings) logger.warn(`${warning.setting}: ${warning.message}`);
    logger.log(
      `Credentials rotated: assertions now carry thumbprint ${credentials.thumbprint} (was ${previous}); the cached token is used until it expires.`,
    );
    observer.credentialsChanged('rotated');
  }
}
