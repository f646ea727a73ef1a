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
import { TokenExchangeError } from '../platform-auth.errors.js';

/** The body an HTTP client receives: what went wrong in general terms, never the platform's details or a hint. */
export interface PlatformAuthErrorBody {
  readonly statusCode: 502 | 503;
  readonly error: 'Bad Gateway' | 'Service Unavailable';
  readonly message: string;
  readonly code: 'PLATFORM_AUTH_TOKEN_EXCHANGE';
}

/**
 * Opt-in: answers a `TokenExchangeError` that reaches the HTTP layer with 503 when it is `transient` (the platform
 * is unavailable for now; `Retry-After` when the wait is known) or 502 (the platform refused this service's
 * credentials, or answered nonsense: a problem for the operators, not the caller), instead of Nest's generic 500. The body says only that;
 * the full error, hint included, is logged for the operators. Works with Express and Fastify alike.
 *
 * Register it globally with `{ provide: APP_FILTER, useClass: PlatformAuthExceptionFilter }`, or
 * `app.useGlobalFilters(new PlatformAuthExceptionFilter(app.get(HttpAdapterHost)))`.
 */
@Catch(TokenExchangeError)
@Injectable()
export class PlatformAuthExceptionFilter implements ExceptionFilter<TokenExchangeError> {
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

  catch(error: TokenExchangeError, host: ArgumentsHost): void {
    const adapter = this.adapterHost.httpAdapter;
    const response: unknown = host.switchToHttp().getResponse();
    const { transient } = error;
    const body: PlatformAuthErrorBody = transient
      ? {
          statusCode: 503,
          error: 'Service Unavailable',
          message: 'The platform this service depends on is unavailable; retry later.',
          code: error.code,
        }
      : {
          statusCode: 502,
          error: 'Bad Gateway',
          message: 'This service could not authenticate to the platform it depends on.',
          code: error.code,
        };
    this.logger.error(`${body.statusCode} answered for a failed token exchange: ${error.message}`);
    if (transient && error.retryAfterSeconds !== undefined && error.retryAfterSeconds > 0)
      adapter.setHeader(response, 'Retry-After', String(Math.ceil(error.retryAfterSeconds)));
    adapter.reply(response, body, body.statusCode);
  }
}
