import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import { openCredentials } from '../credentials/credentials.loader.js';
import { pairNames } from '../credentials/key-pair.sources.js';
import { BY_OPTION, ConfigReport } from '../options/config.report.js';
import type { TokenProvider } from './token.provider.js';
import { readOptions } from '../options/options.read.js';
import { PLATFORM_AUTH_OPTIONS } from '../options/options.table.js';
import type { OptionTable } from '../options/options.table.types.js';
import { checkMachineId } from '../options/options.resolver.js';
import { CredentialRotationError } from '../platform-auth.errors.js';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import type { CredentialsLifecycle } from './credentials.lifecycle.js';
import type { TokenExchangeAttempts } from './token-exchange.attempts.js';
import type { ExchangeOutcome, TokenCache } from './token.cache.js';

/** The pair `rotateCredentials()` puts in use, and under which machineId. */
type RotateCredentialsInput = Parameters<TokenProvider['rotateCredentials']>[0];

/** The options a rotation reads, as the module's options name them; a flat name of an earlier shape is refused. */
const ROTATION_OPTIONS: OptionTable = Object.fromEntries(
  Object.entries(PLATFORM_AUTH_OPTIONS).filter(([name]) => /^(key|key\..+|machineId)$/.test(name)),
);

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
 * `rotateCredentials()`: every start-up check on the new pair and the machineId (a key in a token or a signer opened
 * and proven by a test signature, as at start-up), then one exchange signed with it (transient failures retried like
 * any exchange), and only then the lifecycle's `rotate` transition; the new key is closed again when it is not put in
 * use. Problems name the input's own paths (`key.passphrase`). Rotations run one at a time.
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
    const given = readOptions<Partial<RotateCredentialsInput>>(input, report, ROTATION_OPTIONS);
    const inUse = lifecycle.active;
    const machineId = given.machineId ?? inUse.machineId;
    checkMachineId(machineId, report);
    if (report.problems.length === 0 && this.options.sharedStore && machineId !== inUse.machineId) {
      // One replica moving to another integration would hand its tokens to replicas still on the old one. Such a
      // cut-over is a named integration beside this one, or a redeploy.
      report.problem('machineId', 'changes the integration while a shared token store is configured; not supported');
    }
    const names = pairNames('key');
    const sources = { ...given.key, names, thumbprintAlgorithm: inUse.credentials.thumbprintAlgorithm };
    const credentials = await openCredentials(sources, clock.now(), report);
    const refusal = credentials && lifecycle.refusal(credentials);
    if (refusal)
      report.problem(sources.certificatePath !== undefined ? names.certificatePath : names.certificate, refusal);
    if (!credentials || report.problems.length > 0) {
      await credentials?.key.close();
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
      await credentials.key.close();
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
