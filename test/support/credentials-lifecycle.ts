import type { LoggerService } from '@nestjs/common';
import type { Clock } from 'nestjs-platform-auth';
import type { LoadedCredentials } from '../../lib/credentials/credentials.loader.js';
import { pairNames } from '../../lib/credentials/key-pair.sources.js';
import { PlatformAuthTelemetry } from '../../lib/telemetry/telemetry.service.js';
import { CredentialsLifecycle } from '../../lib/token/credentials.lifecycle.js';

/** A credential lifecycle over `credentials` (machineId `machine`), for tests that drive its parts directly. */
export function credentialsLifecycle(
  credentials: LoadedCredentials,
  clock: Clock,
  logger: LoggerService,
  observer = PlatformAuthTelemetry.channelOnly('test', clock),
): CredentialsLifecycle {
  return new CredentialsLifecycle({
    settings: { audience: 'https://platform.test/token', clockMarginSeconds: 30, assertionLifetimeSeconds: 300 },
    clock,
    machineId: 'machine',
    credentials,
    files: { sources: { names: pairNames('key') }, names: {} },
    observer,
    logger,
  });
}
