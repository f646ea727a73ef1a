import type { Clock } from '../platform-auth.clock.js';
import {
  OTEL_SPAN_KIND_INTERNAL,
  OTEL_SPAN_STATUS_ERROR,
  type OtelApi,
  type OtelAttributes,
  type OtelCounter,
  type OtelHistogram,
  type OtelTracer,
} from './otel-api.types.js';
import { TELEMETRY_ATTRIBUTES as ATTR, TELEMETRY_NAMES as NAMES } from './telemetry.events.js';
import { inContext, loadInstrumentationScope, type InstrumentationScope } from './telemetry.scope.js';

/** The two token requests of user sign-in, by their OAuth grant type. */
type UserGrantType = 'authorization_code' | 'refresh_token';

interface UserInstruments {
  readonly api: OtelApi;
  readonly tracer: OtelTracer;
  readonly requests: OtelCounter;
  readonly duration: OtelHistogram;
}

const SPAN_OF: Readonly<Record<UserGrantType, string>> = {
  authorization_code: NAMES.userCodeExchangeSpan,
  refresh_token: NAMES.userRefreshSpan,
};

/**
 * Spans and metrics of user sign-in's token requests: the code exchange and the refresh, each in a span of its own
 * (the active context, so the HTTP client span of the request nests under it), counted by outcome and timed.
 * Nothing user-specific is recorded: no user, code, token or client secret, only the grant, the outcome, the
 * failure's reason and the token endpoint's host.
 */
export class PlatformUserTelemetry {
  private readonly attributes: Readonly<Record<string, string>>;
  private readonly instruments: Promise<UserInstruments | undefined>;

  /** Starts loading `@opentelemetry/api`; without it, `record` only runs what it is given. */
  constructor(
    tokenEndpoint: string,
    private readonly clock: Clock,
  ) {
    this.attributes = { [ATTR.serverAddress]: new URL(tokenEndpoint).hostname };
    this.instruments = loadInstrumentationScope().then((scope) => scope && createInstruments(scope));
  }

  /** Runs one token request of `grant` inside its span, and counts and times it. */
  async record<T>(grant: UserGrantType, request: () => Promise<T>): Promise<T> {
    const otel = await this.instruments;
    if (!otel) return request();
    const startedAt = this.clock.now();
    const attributes = { ...this.attributes, [ATTR.userGrantType]: grant };
    const span = otel.tracer.startSpan(SPAN_OF[grant], { kind: OTEL_SPAN_KIND_INTERNAL, attributes });
    const end = (result: OtelAttributes) => {
      const all = { ...attributes, ...result };
      otel.requests.add(1, all);
      otel.duration.record(Math.max(0, this.clock.now() - startedAt) / 1000, all);
      for (const [key, value] of Object.entries(result)) if (value !== undefined) span.setAttribute(key, value);
      if (result[ATTR.errorType] !== undefined)
        span.setStatus({ code: OTEL_SPAN_STATUS_ERROR, message: String(result[ATTR.errorType]) });
      span.end();
    };
    try {
      const tokens = await inContext(otel.api, span, request);
      end({ [ATTR.outcome]: 'success' });
      return tokens;
    } catch (error) {
      const { reason, status } = error as { reason?: unknown; status?: unknown };
      end({
        [ATTR.outcome]: 'failure',
        [ATTR.errorType]: typeof reason === 'string' ? reason : '_OTHER',
        ...(typeof status === 'number' ? { [ATTR.statusCode]: status } : {}),
      });
      throw error;
    }
  }
}

function createInstruments({ api, tracer, meter }: InstrumentationScope): UserInstruments {
  return {
    api,
    tracer,
    requests: meter.createCounter(NAMES.userTokenRequests, {
      description: 'User sign-in token requests (code exchanges and refreshes), by grant type and outcome',
      unit: '{request}',
    }),
    duration: meter.createHistogram(NAMES.userTokenRequestDuration, {
      description: 'Duration of one user sign-in token request',
      unit: 's',
    }),
  };
}
