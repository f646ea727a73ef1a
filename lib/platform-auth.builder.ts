import type { LoggerService } from '@nestjs/common';
import type { Clock } from './platform-auth.clock.js';
import { PlatformAuthConfigError } from './platform-auth.errors.js';
import { PlatformTenantConfigError } from './platform-auth.tenant-errors.js';
import { loadPlatformAuthConfig, type ResolvedPlatformAuthConfig } from './platform-auth.configuration.js';
import type { PlatformAuthOptions } from './options/platform-auth-options.interface.js';
import { BY_OPTION } from './options/config.report.js';
import { DEFAULT_INTEGRATION } from './options/integration-name.util.js';
import { PlatformAuthTelemetry } from './telemetry/telemetry.service.js';
import { integrationHash } from './telemetry/telemetry.events.js';
import { PlatformAuthRuntime } from './platform-auth.wiring.js';

/**
 * Whose settings are checked. An application's (`forRoot`, the command line) come from its code or its environment:
 * they are named by option and environment variable, and the environment (the process's unless given) is checked
 * for mistyped or switched-off `PLATFORM_*` variables. A tenant's come from the registry's resolver: they are named
 * by option only, in an error naming the tenant, and no environment is checked, since its variables say nothing
 * about the tenant's settings.
 */
type SettingsOwner =
  | { readonly integration: string; readonly env?: Readonly<Record<string, string | undefined>> }
  | { readonly tenantId: string };

interface IntegrationLoadInput {
  readonly options: PlatformAuthOptions;
  readonly owner: SettingsOwner;
  /** The injected clock's time: certificates are checked against it. */
  readonly nowMs: number;
}

/**
 * How the integration's telemetry is made: on the diagnostics channel only (the command line), or with
 * OpenTelemetry when the application has it, identified by the token URL and machine id unless `identity` says
 * otherwise (a tenant registry, whose attribute values must not grow with the number of tenants).
 */
type TelemetryPlan =
  | { readonly channelOnly: true }
  | {
      readonly channelOnly?: false;
      readonly identity?: { readonly hashOf: readonly [string, string]; readonly name: string };
      readonly spanAttributes?: Readonly<Record<string, string>>;
      readonly metricAttributes?: Readonly<Record<string, string>>;
    };

interface IntegrationStartInput {
  readonly config: ResolvedPlatformAuthConfig;
  /** `default`, the name given to `forRoot`, or a tenant registry's name. */
  readonly integration: string;
  readonly clock: Clock;
  readonly logger: LoggerService;
  readonly telemetry: TelemetryPlan;
  /** Started here (a tenant, the proxy) rather than by Nest's lifecycle hooks. */
  readonly start?: boolean;
  /** Put before each configuration warning in the log: a tenant's say they are about its settings. */
  readonly warningPrefix?: string;
}

/**
 * Every start-up check of one integration's settings, all problems at once: a `PlatformAuthConfigError`, or for a
 * tenant a `PlatformTenantConfigError`. The resolved configuration owns the opened key: hand it to
 * {@link startIntegration}, or close it (`credentials.key.close()`).
 */
export async function loadIntegration(input: IntegrationLoadInput): Promise<ResolvedPlatformAuthConfig> {
  const { options, owner, nowMs } = input;
  if ('integration' in owner) {
    return loadPlatformAuthConfig(options, nowMs, { integration: owner.integration }, owner.env);
  }
  try {
    return await loadPlatformAuthConfig(options, nowMs, BY_OPTION, {});
  } catch (error) {
    if (!(error instanceof PlatformAuthConfigError)) throw error;
    throw new PlatformTenantConfigError(owner.tenantId, error.problems);
  }
}

/**
 * Builds the integration from its checked configuration through the one composition root: its warnings logged, its
 * telemetry made, started when asked. On failure whatever was opened is released (the runtime shut down, or the key
 * closed when none was built), so the caller only owns a runtime it got back.
 */
export async function startIntegration(input: IntegrationStartInput): Promise<PlatformAuthRuntime> {
  const { config, integration, clock, logger } = input;
  for (const warning of config.warnings)
    logger.warn(`${input.warningPrefix ?? ''}${warning.setting}: ${warning.message}`);
  let runtime: PlatformAuthRuntime | undefined;
  try {
    const telemetry = await makeTelemetry(input);
    runtime = new PlatformAuthRuntime({ config, integration, clock, logger, telemetry });
    if (input.start) await runtime.onModuleInit();
    return runtime;
  } catch (error) {
    if (runtime) await runtime.onApplicationShutdown();
    else await config.credentials.key.close();
    throw error;
  }
}

function makeTelemetry(input: IntegrationStartInput): Promise<PlatformAuthTelemetry> | PlatformAuthTelemetry {
  const { config, integration, clock, logger, telemetry: plan } = input;
  if (plan.channelOnly) {
    return PlatformAuthTelemetry.channelOnly(integrationHash(config.tokenUrl, config.machineId), clock);
  }
  const [first, second] = plan.identity?.hashOf ?? [config.tokenUrl, config.machineId];
  return PlatformAuthTelemetry.load(
    {
      integration: integrationHash(first, second),
      name: plan.identity?.name ?? (integration === DEFAULT_INTEGRATION ? undefined : integration),
      serverAddress: new URL(config.tokenUrl).hostname,
      logger,
      spanAttributes: plan.spanAttributes,
      metricAttributes: plan.metricAttributes,
    },
    clock,
  );
}
