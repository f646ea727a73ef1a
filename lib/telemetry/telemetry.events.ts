import { createHash } from 'node:crypto';
import type { PlatformAuthDiagnosticsEvent } from '../platform-auth.observer.js';

/**
 * The `node:diagnostics_channel` channel every telemetry event is published on, whether or not OpenTelemetry is
 * installed: `diagnostics_channel.subscribe(PLATFORM_AUTH_DIAGNOSTICS_CHANNEL, (event) => …)`.
 */
export const PLATFORM_AUTH_DIAGNOSTICS_CHANNEL = 'nestjs-platform-auth';

/**
 * Names of the OpenTelemetry meter, instruments, spans and attributes (the table in docs/operations.md lists them,
 * and a test checks it against what is emitted). Every attribute is an OpenTelemetry semantic-convention name or
 * starts with `platform_auth.`.
 */
export const TELEMETRY_NAMES = {
  meter: 'nestjs-platform-auth',
  exchanges: 'platform_auth.token.exchanges',
  exchangeDuration: 'platform_auth.token.exchange.duration',
  tokenTimeToExpiry: 'platform_auth.token.time_to_expiry',
  certificateTimeToExpiry: 'platform_auth.certificate.time_to_expiry',
  reauthentications: 'platform_auth.reauthentications',
  storeLock: 'platform_auth.store.lock',
  credentialChanges: 'platform_auth.credentials.changes',
  retries: 'platform_auth.http.retries',
  rateLimitWait: 'platform_auth.http.rate_limit.wait',
  userTokenRequests: 'platform_auth.user.token_requests',
  userTokenRequestDuration: 'platform_auth.user.token_request.duration',
  exchangeSpan: 'platform_auth.token_exchange',
  reauthenticationSpan: 'platform_auth.reauthentication',
  userCodeExchangeSpan: 'platform_auth.user.code_exchange',
  userRefreshSpan: 'platform_auth.user.refresh',
} as const;

/** Attribute keys: OpenTelemetry's own where one exists, `platform_auth.*` otherwise. */
export const TELEMETRY_ATTRIBUTES = {
  /** A hash of the token URL and machineId (see {@link integrationHash}); on everything an integration emits. */
  integration: 'platform_auth.integration',
  /** The integration's name (`forRoot({ name })`), `default` for the default one; not secret. */
  integrationName: 'platform_auth.integration.name',
  /**
   * A tenant's id: on spans when `forTenants({ telemetry: { tenantIdInSpans } })`, on data points only for the tenants
   * `telemetry.tenantIdInMetrics` lists; never otherwise, so the number of series does not grow with tenants.
   */
  tenantId: 'platform_auth.tenant.id',
  /** `success` or `failure`. */
  outcome: 'platform_auth.outcome',
  /** HTTP attempts one token exchange made. */
  attempts: 'platform_auth.exchange.attempts',
  storeLockOutcome: 'platform_auth.store.lock.outcome',
  credentialsOutcome: 'platform_auth.credentials.outcome',
  /** `authorization_code` or `refresh_token`. */
  userGrantType: 'platform_auth.user.grant_type',
  /** Why it failed (a `TokenExchangeError` or `UserAuthError` reason); only on failures. */
  errorType: 'error.type',
  statusCode: 'http.response.status_code',
  /** The host of the token endpoint. */
  serverAddress: 'server.address',
  /** Why a call to the platform's APIs was re-sent. */
  retryReason: 'platform_auth.retry.reason',
  /** Which re-send of its call this one is: 1 for the first. */
  resendCount: 'http.request.resend_count',
} as const;

/** What happened, without the integration it happened to. */
export type PlatformAuthDiagnosticsEventBody = PlatformAuthDiagnosticsEvent extends infer Event
  ? Event extends unknown
    ? Omit<Event, 'integration'>
    : never
  : never;

/**
 * A short, stable name for the integration in telemetry: a hash of the token URL and the machineId, so dashboards
 * can tell integrations apart without the machineId itself appearing anywhere.
 */
export function integrationHash(tokenUrl: string, machineId: string): string {
  return createHash('sha256').update(`${tokenUrl}\n${machineId}`).digest('hex').slice(0, 12);
}
