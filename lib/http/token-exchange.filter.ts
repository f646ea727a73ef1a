import {
  Catch,
  Inject,
  Injectable,
  Logger,
  Optional,
  type ArgumentsHost,
  type ExceptionFilter,
  type LoggerService,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { LOGGER_CONTEXT, PLATFORM_AUTH_LOGGER } from '../platform-auth.constants.js';
import { TokenExchangeError, type PlatformAuthError } from '../platform-auth.errors.js';
import { PlatformUnavailableError } from '../calls/calls.errors.js';
import { RateLimitWaitError } from '../calls/rate-limit/rate-limit.errors.js';
import {
  PlatformTenantConfigError,
  TenantReleasedError,
  TenantResolutionError,
  UnknownTenantError,
} from '../platform-auth.tenant-errors.js';

/** The body an HTTP client receives: what went wrong in general terms, never the platform's details or a hint. */
export interface PlatformAuthErrorBody {
  readonly statusCode: 404 | 500 | 502 | 503;
  readonly error: 'Not Found' | 'Internal Server Error' | 'Bad Gateway' | 'Service Unavailable';
  readonly message: string;
  /**
   * The code of the error answered: a failed token exchange, a `Retry-After` too long to wait, a rate-limit wait, an
   * unknown tenant, a tenant with invalid settings, a tenant resolution that failed or timed out, a tenant let go.
   */
  readonly code:
    | 'PLATFORM_AUTH_TOKEN_EXCHANGE'
    | 'PLATFORM_AUTH_PLATFORM_UNAVAILABLE'
    | 'PLATFORM_AUTH_RATE_LIMIT_WAIT'
    | 'PLATFORM_AUTH_UNKNOWN_TENANT'
    | 'PLATFORM_AUTH_TENANT_CONFIG'
    | 'PLATFORM_AUTH_TENANT_RESOLUTION'
    | 'PLATFORM_AUTH_TENANT_RELEASED';
}

/** The errors the filter answers: those of `@Catch` below. */
type PlatformAuthAnsweredError =
  | TokenExchangeError
  | PlatformUnavailableError
  | RateLimitWaitError
  | UnknownTenantError
  | PlatformTenantConfigError
  | TenantResolutionError
  | TenantReleasedError;

/** What the filter answers an error with, what the log calls it, and the seconds a client should wait, when known. */
interface Answer {
  readonly body: PlatformAuthErrorBody;
  readonly failure: string;
  readonly retryAfterSeconds?: number;
}

const UNAVAILABLE = 'The platform this service depends on is unavailable; retry later.';

/**
 * Opt-in: answers, instead of Nest's generic 500, each error of this module that says when the platform can be asked
 * again or that it refused this service:
 * - a `TokenExchangeError` with 503 when it is `transient` (the platform is unavailable for now) or 502 (the platform
 *   refused this service's credentials, or answered nonsense: a problem for the operators, not the caller);
 * - a `PlatformUnavailableError` (a `Retry-After` longer than `retry.maxDelayMs`) and a `RateLimitWaitError` (a turn
 *   further ahead than `rateLimit.maxWaitMs`) with 503;
 * - of `forTenants`: an `UnknownTenantError` with 404, a `PlatformTenantConfigError` with 500 and its code (never the
 *   settings or their problems), a `TenantResolutionError` (the resolver threw or timed out) with 503 and the back-off
 *   as `Retry-After`, a `TenantReleasedError` (evicted while waited for, or shut down) with 503.
 *
 * A 503 carries `Retry-After` in whole seconds when the wait is known: the error's own wait, measured on the
 * integration's clock when the error was made. The body says only that; the full error, hint included, is logged
 * for the operators. Works with Express and Fastify alike.
 *
 * Register it globally with `{ provide: APP_FILTER, useClass: PlatformAuthExceptionFilter }`, or
 * `app.useGlobalFilters(new PlatformAuthExceptionFilter(app.get(HttpAdapterHost)))`.
 */
@Catch(
  TokenExchangeError,
  PlatformUnavailableError,
  RateLimitWaitError,
  UnknownTenantError,
  PlatformTenantConfigError,
  TenantResolutionError,
  TenantReleasedError,
)
@Injectable()
export class PlatformAuthExceptionFilter implements ExceptionFilter<PlatformAuthError> {
  private readonly logger: LoggerService;

  /**
   * `logger`: where the full error goes. Registered as a provider, the filter finds the module's (the `logger`
   * option, else Nest's `Logger`); constructed by hand it takes the one given, else Nest's `Logger`.
   */
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Optional() @Inject(PLATFORM_AUTH_LOGGER) logger?: LoggerService,
  ) {
    this.logger = logger ?? new Logger(LOGGER_CONTEXT);
  }

  catch(error: PlatformAuthError, host: ArgumentsHost): void {
    const adapter = this.adapterHost.httpAdapter;
    const response: unknown = host.switchToHttp().getResponse();
    // Nest hands the filter only the classes `@Catch` names.
    const { body, failure, retryAfterSeconds } = answerFor(error as PlatformAuthAnsweredError);
    const line = `${body.statusCode} answered for ${failure}: ${error.message}`;
    // A tenant nobody knows is the caller's mistake, not an incident.
    if (body.statusCode === 404) this.logger.warn(line);
    else this.logger.error(line);
    if (retryAfterSeconds !== undefined && retryAfterSeconds > 0)
      adapter.setHeader(response, 'Retry-After', String(Math.ceil(retryAfterSeconds)));
    adapter.reply(response, body, body.statusCode);
  }
}

function answerFor(error: PlatformAuthAnsweredError): Answer {
  const unavailable = (message: string) =>
    ({ statusCode: 503, error: 'Service Unavailable', message, code: error.code }) as const;
  if (isTenantError(error)) return tenantAnswer(error, unavailable);
  // Each error's own wait, from the moment it was made on its integration's clock: an absolute `availableAtMs`
  // would need that clock, and the filter answers for every integration.
  if (error instanceof PlatformUnavailableError)
    return {
      body: unavailable(UNAVAILABLE),
      failure: 'a call the platform will not take yet',
      retryAfterSeconds: error.retryAfterMs / 1000,
    };
  if (error instanceof RateLimitWaitError)
    return {
      body: unavailable('This service is at its limit of calls to the platform it depends on; retry later.'),
      failure: 'a call held back by the rate limit',
      retryAfterSeconds: error.waitMs / 1000,
    };
  if (error.transient)
    return {
      body: unavailable(UNAVAILABLE),
      failure: 'a failed token exchange',
      retryAfterSeconds: error.retryAfterSeconds,
    };
  return {
    body: {
      statusCode: 502,
      error: 'Bad Gateway',
      message: 'This service could not authenticate to the platform it depends on.',
      code: error.code,
    },
    failure: 'a failed token exchange',
  };
}

type TenantError = UnknownTenantError | PlatformTenantConfigError | TenantResolutionError | TenantReleasedError;

function isTenantError(error: PlatformAuthAnsweredError): error is TenantError {
  return (
    error instanceof UnknownTenantError ||
    error instanceof PlatformTenantConfigError ||
    error instanceof TenantResolutionError ||
    error instanceof TenantReleasedError
  );
}

/** The answers to a tenant registry's errors; the body never names the tenant (the caller sent it) or its settings. */
function tenantAnswer(error: TenantError, unavailable: (message: string) => PlatformAuthErrorBody): Answer {
  if (error instanceof UnknownTenantError)
    return {
      body: { statusCode: 404, error: 'Not Found', message: 'Unknown tenant.', code: error.code },
      failure: 'an unknown tenant',
    };
  if (error instanceof PlatformTenantConfigError)
    return {
      body: {
        statusCode: 500,
        error: 'Internal Server Error',
        message: "This tenant's settings are invalid; the operators have been told.",
        code: error.code,
      },
      failure: 'a tenant with invalid settings',
    };
  if (error instanceof TenantResolutionError)
    return {
      body: unavailable("This tenant's settings could not be read; retry later."),
      failure: error.timedOut ? 'a tenant resolution that timed out' : 'a failed tenant resolution',
      retryAfterSeconds: error.retryAfterMs / 1000,
    };
  return {
    body: unavailable('This tenant is being restarted; retry later.'),
    failure: 'a tenant let go while the request waited',
    retryAfterSeconds: error.reason === 'evicted' ? 1 : undefined,
  };
}
