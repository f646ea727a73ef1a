import { Catch, Injectable, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { LOGGER_CONTEXT } from '../platform-auth.constants.js';
import { TokenExchangeError } from '../platform-auth.errors.js';

/** The body an HTTP client receives: what went wrong in general terms, never the platform's details or a hint. */
export interface PlatformAuthErrorBody {
  readonly statusCode: 502 | 503;
  readonly error: 'Bad Gateway' | 'Service Unavailable';
  readonly message: string;
  readonly code: 'PLATFORM_AUTH_TOKEN_EXCHANGE';
}

/** Failures that pass by themselves: the platform was down, slow, rate limiting, or we are holding callers back. */
function isTransient(error: TokenExchangeError): boolean {
  if (error.reason === 'http_error') return error.status === 429 || (error.status ?? 0) >= 500;
  return (
    error.reason === 'network_error' ||
    error.reason === 'timeout' ||
    error.reason === 'backoff' ||
    error.reason === 'aborted'
  );
}

/**
 * Opt-in: answers a `TokenExchangeError` that reaches the HTTP layer with 503 (the platform is unavailable for now;
 * `Retry-After` when the wait is known) or 502 (the platform refused this service's credentials, or answered
 * nonsense: a problem for the operators, not the caller), instead of Nest's generic 500. The body says only that;
 * the full error, hint included, is logged for the operators. Works with Express and Fastify alike.
 *
 * Register it globally with `{ provide: APP_FILTER, useClass: PlatformAuthExceptionFilter }`, or
 * `app.useGlobalFilters(new PlatformAuthExceptionFilter(app.get(HttpAdapterHost)))`.
 */
@Catch(TokenExchangeError)
@Injectable()
export class PlatformAuthExceptionFilter implements ExceptionFilter<TokenExchangeError> {
  private readonly logger = new Logger(LOGGER_CONTEXT);

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: TokenExchangeError, host: ArgumentsHost): void {
    const adapter = this.adapterHost.httpAdapter;
    const response: unknown = host.switchToHttp().getResponse();
    const transient = isTransient(error);
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
