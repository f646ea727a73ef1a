import type { LoggerService } from '@nestjs/common';
import type { Clock } from './platform-auth.clock.js';
import { shutdownError } from './platform-auth.errors.js';
import type { ResolvedPlatformAuthConfig } from './platform-auth.configuration.js';
import { MIN_EXCHANGE_INTERVAL_MS } from './options/options.constants.js';
import { certificateNotAfterMs } from './credentials/active-credentials.js';
import type { AssertionSigner } from './token/assertion.signer.js';
import { CredentialsLifecycle } from './token/credentials.lifecycle.js';
import { CredentialsRotator } from './token/credentials.rotator.js';
import { TokenExchangeAttempts } from './token/token-exchange.attempts.js';
import { TokenExchangeClient } from './token/token-exchange.client.js';
import { TokenCache } from './token/token.cache.js';
import { TokenProvider } from './token/token.provider.js';
import { TokenStatusTracker } from './token/token-status.tracker.js';
import { runStartupCheck } from './token/startup.check.js';
import { observedTokenSource, type PlatformAuthTelemetry } from './telemetry/telemetry.service.js';
import { TokenStoreHost } from './store/token-store.host.js';
import { createRateLimitGate, type RateLimitGate } from './calls/rate-limit/rate-limit.gate.js';
import { PlatformAuthInterceptor } from './http/platform-auth.interceptor.js';
import { createPlatformHttpClient, type PlatformHttpService } from './http/platform-http.service.js';
import { BearerPolicy } from './http/engine/bearer.policy.js';
import type { CallAdmission } from './http/engine/call-admission.js';
import { OPEN_GATE } from './calls/call-gate.js';
import { CallRetryPolicy } from './calls/retry.policy.js';
import { PlatformFetch } from './http/clients/platform-fetch.js';
import { startupLine } from './platform-auth.startup-line.js';

interface PlatformAuthWiringInput {
  readonly config: ResolvedPlatformAuthConfig;
  /** `default`, or the name given to `forRoot`. */
  readonly integration: string;
  readonly clock: Clock;
  readonly logger: LoggerService;
  readonly telemetry: PlatformAuthTelemetry;
}

/**
 * The composition root: everything one integration is made of, built once, in order, by its constructor. The
 * module's providers, the CLI and the tests all come through here, so they all run the wiring production runs. It
 * owns the integration's one shutdown signal; its `on…` methods are the Nest lifecycle hooks the module's provider of
 * it receives.
 */
export class PlatformAuthRuntime {
  readonly tokens: TokenProvider;
  readonly signer: AssertionSigner;
  readonly interceptor: PlatformAuthInterceptor;
  readonly httpService: PlatformHttpService;
  readonly platformFetch: PlatformFetch;
  // True private fields: the credentials and the cache must not show when someone inspects the container.
  readonly #shutdown = new AbortController();
  readonly #parts: {
    readonly startupCheck: ResolvedPlatformAuthConfig['startupCheck'];
    readonly startupLine: string;
    readonly logger: LoggerService;
    readonly telemetry: PlatformAuthTelemetry;
    readonly credentials: CredentialsLifecycle;
    readonly store?: TokenStoreHost;
    readonly rateLimit?: RateLimitGate;
    readonly client: TokenExchangeClient;
    readonly closeHttp: () => void;
    readonly detachInterceptor: () => void;
    readonly policy: BearerPolicy;
  };

  constructor(input: PlatformAuthWiringInput) {
    const { config, integration, clock, logger, telemetry } = input;
    const shutdown = this.#shutdown.signal;
    const credentials = new CredentialsLifecycle({
      settings: config,
      clock,
      machineId: config.machineId,
      credentials: config.credentials,
      next: config.nextCredentials,
      files: {
        sources: config.credentialSources,
        nextSources: config.nextCredentialSources,
        reloadIntervalMs: config.credentialsReloadIntervalMs,
        names: config.settingNames,
      },
      observer: telemetry,
      logger,
    });
    this.signer = credentials.signer;
    const client = new TokenExchangeClient(config, () => clock.now());
    const attempts = new TokenExchangeAttempts(config, clock, credentials, client, logger);

    const store = config.tokenStore
      ? new TokenStoreHost({
          settings: config.tokenStore,
          identity: config,
          pairs: credentials,
          clock,
          integration,
          logger,
          observer: telemetry,
        })
      : undefined;
    const observed = observedTokenSource(attempts, telemetry);
    const source = store ? store.decorate(observed) : observed;

    const tracker = new TokenStatusTracker(logger);
    const cache = new TokenCache({
      clock,
      minExchangeIntervalMs: MIN_EXCHANGE_INTERVAL_MS,
      refreshBeforeExpirySeconds: config.refreshBeforeExpirySeconds,
      failureBackoffMs: config.failureBackoffMs,
      source,
      shutdown,
      listener: tracker,
    });
    const rotator = new CredentialsRotator({
      clock,
      credentials,
      attempts,
      recorder: telemetry,
      cache,
      observer: telemetry,
      logger,
      sharedStore: store !== undefined,
      shutdown,
    });
    const rateLimit =
      config.rateLimit &&
      createRateLimitGate({
        settings: config.rateLimit,
        integration,
        clock,
        shared: store?.scripts,
        events: { waited: (ms) => telemetry.rateLimitWait(ms), modeChanged: (mode) => telemetry.rateLimitMode(mode) },
        logger,
      });
    const statusSources = { integration, clock, cache, credentials, sharedStore: store, rateLimit };
    this.tokens = TokenProvider.create({
      cache,
      clockOffsetMs: () => attempts.clockOffsetMs,
      rotateCredentials: (rotation) => rotator.rotate(rotation),
      status: () => tracker.snapshot(statusSources),
    });

    // One policy per integration: axios and fetch clients decide who gets the token and when to renew it alike.
    const retry = new CallRetryPolicy(config.callRetry, config.idempotencyKey, clock, telemetry, shutdown);
    const policy = new BearerPolicy(this.tokens, config.allowedOrigins, telemetry, rateLimit ?? OPEN_GATE, retry);
    const interceptor = PlatformAuthInterceptor.create(policy);
    this.interceptor = interceptor;
    const http = createPlatformHttpClient(config.baseUrl, interceptor);
    this.httpService = http.httpService;
    this.platformFetch = PlatformFetch.create(config.baseUrl, policy);
    telemetry.observe({
      tokenExpiresAtMs: () => cache.current?.expiresAtMs,
      certificateNotAfterMs: () => certificateNotAfterMs(credentials.active.credentials),
    });
    this.#parts = {
      startupCheck: config.startupCheck,
      startupLine: startupLine(config, integration, clock.now()),
      logger,
      telemetry,
      credentials,
      store,
      rateLimit,
      client,
      closeHttp: () => http.close(),
      detachInterceptor: () => interceptor.detachAll(),
      policy,
    };
  }

  /** @internal A tenant's: every call of every client of this runtime enters through `admission`. */
  admitThrough(admission: CallAdmission): void {
    this.#parts.policy.admission = admission;
  }

  /** Says what was configured, connects the shared store before the first token is wanted, starts the watch. */
  async onModuleInit(): Promise<void> {
    this.#parts.logger.log(this.#parts.startupLine);
    await this.#parts.store?.connect();
    this.#parts.rateLimit?.start();
    this.#parts.credentials.start();
  }

  /** With `startupCheck`, the first token is acquired while the application boots. */
  async onApplicationBootstrap(): Promise<void> {
    await runStartupCheck(this.#parts.startupCheck, this.tokens, this.#parts.logger);
  }

  /**
   * Torn down at application shutdown, after Nest has drained the HTTP server (not at module destroy, which comes
   * before the drain): requests still in flight finish their platform calls, token exchange included. Then the one
   * shutdown signal stops every part: exchanges in flight, rotations, the credential watch, the store, the sockets,
   * and the keys are closed (a PKCS#11 token's sessions).
   */
  async onApplicationShutdown(): Promise<void> {
    const parts = this.#parts;
    this.#shutdown.abort(shutdownError());
    parts.credentials.stop();
    // A tenant's own instance keeps its interceptor: the tenant's admission refuses every later call there, where a
    // detached instance would send it without a token.
    if (parts.policy.admission === undefined) parts.detachInterceptor();
    parts.closeHttp();
    await this.platformFetch.close();
    parts.client.destroy();
    parts.telemetry.close();
    parts.rateLimit?.close();
    await parts.store?.close();
    await parts.credentials.close();
  }
}
