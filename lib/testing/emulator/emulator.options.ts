import type { ThumbprintAlgorithm } from '../../options/platform-auth-options.interface.js';
import type {
  EmulatedEnvironment,
  EmulatedIntegration,
  EmulatedModuleOptions,
  EmulatorCounters,
  EmulatorRateLimit,
  IntegrationPermission,
  PlatformEmulatorOptions,
  RegisteredIntegration,
} from './emulator.types.js';
import type { TestCredentials } from '../test-credentials.util.js';
import { checkRateLimit } from './emulator.rate-limit.js';

/** What of the emulator's own settings an app needs to talk to it. */
interface EmulatorClientSettings {
  readonly url: string;
  readonly audience: string;
  readonly thumbprintAlgorithm: ThumbprintAlgorithm;
  readonly acceptCompactJwt: boolean;
}

/** A registered integration with its credentials and the module options and environment an app needs to use it. */
export function emulatedIntegration(
  integration: RegisteredIntegration,
  credentials: TestCredentials,
  settings: EmulatorClientSettings,
): EmulatedIntegration {
  const moduleOptions: EmulatedModuleOptions = {
    baseUrl: settings.url,
    machineId: integration.machineId,
    key: { privateKey: credentials.privateKeyPem, certificate: credentials.certificatePem },
  };
  const env: EmulatedEnvironment = {
    PLATFORM_BASE_URL: settings.url,
    PLATFORM_MACHINE_ID: integration.machineId,
    PLATFORM_PRIVATE_KEY: credentials.privateKeyPem,
    PLATFORM_CERTIFICATE: credentials.certificatePem,
  };
  if (settings.thumbprintAlgorithm !== 'sha1') moduleOptions.thumbprintAlgorithm = settings.thumbprintAlgorithm;
  if (settings.audience !== new URL(settings.url).host) {
    moduleOptions.audience = settings.audience;
    env.PLATFORM_AUDIENCE = settings.audience;
  }
  if (!settings.acceptCompactJwt) moduleOptions.exchange = { encoding: 'base64' };

  // Accessors, so that status and permissions stay those of the live registry entry.
  return {
    get machineId() {
      return integration.machineId;
    },
    get thumbprint() {
      return integration.thumbprint;
    },
    get name() {
      return integration.name;
    },
    get status() {
      return integration.status;
    },
    set status(status: string) {
      integration.status = status;
    },
    get permissions() {
      return integration.permissions;
    },
    set permissions(permissions: IntegrationPermission[]) {
      integration.permissions = permissions;
    },
    get rateLimit() {
      return integration.rateLimit;
    },
    set rateLimit(limit: EmulatorRateLimit | undefined) {
      integration.rateLimit = checkRateLimit(limit, 'rateLimit');
    },
    privateKeyPem: credentials.privateKeyPem,
    certificatePem: credentials.certificatePem,
    moduleOptions,
    env,
  };
}

export function emptyCounters(): EmulatorCounters {
  return {
    exchanges: { total: 0, accepted: 0, rejected: 0, faulted: 0 },
    apiCalls: { total: 0, ok: 0, unauthorized: 0, forbidden: 0, faulted: 0, throttled: 0, maxPerSecond: {} },
    idempotency: { keys: 0, duplicates: 0, mismatches: 0 },
  };
}

export function checkOptions(options: PlatformEmulatorOptions): void {
  if (options.tokenLifetimeSeconds !== undefined)
    checkTokenLifetime(options.tokenLifetimeSeconds, 'tokenLifetimeSeconds');
  const status = options.invalidClientStatus;
  if (status !== undefined && !(Number.isInteger(status) && status >= 400 && status <= 499)) {
    throw new Error(`invalidClientStatus must be a 4xx status (RFC 6749 §5.2 uses 400 or 401), got ${String(status)}`);
  }
  const encodings = options.tokenEncodings;
  if (encodings !== undefined && (encodings.length === 0 || encodings.some((e) => e !== 'jwt' && e !== 'base64'))) {
    throw new Error(`tokenEncodings must list 'jwt', 'base64' or both`);
  }
  const pending = options.maxPendingSignIns;
  if (pending !== undefined && !(Number.isInteger(pending) && pending >= 1)) {
    throw new Error(`maxPendingSignIns must be a whole number >= 1, got ${String(pending)}`);
  }
  const limit = options.journalLimit;
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0)) {
    throw new Error(`journalLimit must be a whole number >= 0, got ${String(limit)}`);
  }
  if (options.clockOffsetMs !== undefined && !Number.isFinite(options.clockOffsetMs)) {
    throw new Error(`clockOffsetMs must be a finite number, got ${String(options.clockOffsetMs)}`);
  }
  const leeway = options.leewaySeconds;
  if (leeway !== undefined && !(Number.isFinite(leeway) && leeway >= 0)) {
    throw new Error(`leewaySeconds must be a number of seconds >= 0, got ${String(leeway)}`);
  }
  if (options.audience !== undefined && options.audience.trim() === '') throw new Error('audience must not be empty');
}

/** docs/platform-contract.md#exchange-response: `expires_in` is an integer number of seconds. */
export function checkTokenLifetime(seconds: number, setting: string): void {
  if (!Number.isInteger(seconds) || seconds < 1)
    throw new Error(`${setting} must be a whole number of seconds, at least 1, got ${String(seconds)}`);
}
