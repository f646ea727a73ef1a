import type { ClaimRuleVerdict } from './emulator.claim-rules.js';
import type { EmulatorRateLimit } from './emulator.rate-limit.js';

/** How a thumbprint is computed: the portal's SHA-1 form, or SHA-256 (the emulator's own copy of the names). */
export type ThumbprintAlgorithm = 'sha1' | 'sha256';

export type { EmulatorRateLimit } from './emulator.rate-limit.js';

/** The two permissions a system integration can hold (docs/platform-contract.md#system-integration). */
export type IntegrationPermission = 'Send message' | 'Retrieve billing data';

export interface PlatformEmulatorOptions {
  /** Interface to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Default 0: a free port chosen by the OS. */
  port?: number;
  /** The `aud` the token endpoint expects. Default: the host of `url` (`127.0.0.1:PORT`), the library's default. */
  audience?: string;
  /** `expires_in` of issued access tokens. Default 600 (about ten minutes, docs/platform-contract.md#access-tokens). */
  tokenLifetimeSeconds?: number;
  /** HTTP status of `invalid_client` errors. Default 400; RFC 6749 §5.2 also allows 401. */
  invalidClientStatus?: number;
  /** Emulator time is `now() + clockOffsetMs`. Default 0. */
  clockOffsetMs?: number;
  /**
   * Seconds of tolerance on `nbf` and `exp` against emulator time. Default 0, strict: the platform's tolerance is not
   * published, so the emulator assumes none and a client that works against it works against any.
   */
  leewaySeconds?: number;
  /** Base time source in ms. Default `Date.now`; tests pass a `FakeClock`'s `now`. */
  now?: () => number;
  /** How registered certificates are turned into the thumbprints `iss` is matched against. Default `sha1`. */
  thumbprintAlgorithm?: ThumbprintAlgorithm;
  /** Accepted forms of the `token` form field: the compact JWT as is, or base64 of it. Default both. */
  tokenEncodings?: Array<'jwt' | 'base64'>;
  /** Journal entries kept; the oldest are dropped first. Default 1000. */
  journalLimit?: number;
  /**
   * Sign-in pages open at once (authorization requests not yet decided); past it the oldest is forgotten, so
   * requests nobody finishes cannot grow memory without end. Default 10 000.
   */
  maxPendingSignIns?: number;
  /** Serve the inspector page at `/_emulator/` (docs/emulator.md). Default false: the path is then 404. */
  inspector?: boolean;
  /**
   * Serve the control endpoint at `/_emulator/control/` (docs/emulator.md), which `platform-auth emulator upload`,
   * `add`, `fault` and `reset` use: JSON, for clients on loopback only, never for browsers. Default false: the path
   * is then 404.
   */
  control?: boolean;
  /** Called after an integration's certificate was replaced, whoever replaced it (API, control, inspector). */
  onCertificateReplaced?: (integration: RegisteredIntegration, certificatePem: string) => void;
}

export interface RegisterIntegrationInput {
  /** The certificate uploaded in the portal, PEM. */
  certificatePem: string;
  name?: string;
  /** Default `Active`, the only status that may authenticate. */
  status?: string;
  /** Default: both permissions. */
  permissions?: IntegrationPermission[];
  /** Default: a new UUID, as the platform assigns one. */
  machineId?: string;
  /** The platform's rate limit of this integration on the API routes. Default: none. */
  rateLimit?: EmulatorRateLimit;
}

/**
 * A system integration in the emulator's registry. The object is live: it is the one the token endpoint and the
 * placeholder routes read, so assigning `status` or `permissions` has the same effect as the emulator's setters.
 */
export interface RegisteredIntegration {
  readonly machineId: string;
  readonly thumbprint: string;
  readonly name: string;
  status: string;
  permissions: IntegrationPermission[];
  /** Assigning it changes the limit at once; `undefined` lifts it. */
  rateLimit?: EmulatorRateLimit;
}

/** Options for `PlatformAuthModule.forRoot`, pointing at one emulator as one integration. */
export interface EmulatedModuleOptions {
  baseUrl: string;
  machineId: string;
  /** The integration's throwaway key and certificate, as PEM text. */
  key: { privateKey: string; certificate: string };
  /** Present only when the emulator does not use the library's default (`sha1`). */
  thumbprintAlgorithm?: ThumbprintAlgorithm;
  /** Present only when the emulator expects an audience other than the library's default. */
  audience?: string;
  /** Present only when the emulator does not accept the library's default encoding (`jwt`). */
  exchange?: { encoding: 'base64' };
}

export type EmulatedEnvironment = Record<
  'PLATFORM_BASE_URL' | 'PLATFORM_MACHINE_ID' | 'PLATFORM_PRIVATE_KEY' | 'PLATFORM_CERTIFICATE',
  string
> &
  Partial<Record<'PLATFORM_AUDIENCE', string>>;

export interface EmulatedIntegration extends RegisteredIntegration {
  /** PKCS#8 PEM of a throwaway key made in memory. */
  privateKeyPem: string;
  certificatePem: string;
  /** Spread into `PlatformAuthModule.forRoot({ ...integration.moduleOptions })`. */
  moduleOptions: EmulatedModuleOptions;
  /** The same settings as environment variables for `platformAuthConfig`; PEMs with real newlines. */
  env: EmulatedEnvironment;
}

/** A one-shot misbehaviour for the next request to a target (`injectFault`). */
export type EmulatorFault =
  /** Answer this instead of processing the request. An object body is sent as JSON, a string as text/plain. */
  | { kind: 'status'; status: number; body?: string | object; headers?: Record<string, string> }
  /** Wait `ms` (real time; cancelled by `close()`), then process the request normally. */
  | { kind: 'delay'; ms: number }
  /** Never answer, until the client gives up or the emulator closes. */
  | { kind: 'hang' }
  /** Reset the connection without any response. */
  | { kind: 'drop' }
  /** 200 with `Content-Type: application/json` and a truncated JSON body. */
  | { kind: 'malformed-json' }
  /** 200 with an HTML error page, as a misconfigured proxy would send. */
  | { kind: 'html' }
  /**
   * 429 or 503 with `Retry-After`: whole seconds, or a `Date` sent as an HTTP-date (the date form, on the
   * emulator's clock when the client compares it with the `Date` header).
   */
  | { kind: 'retry-after'; status: 429 | 503; retryAfter: number | Date };

export type FaultTarget = 'token' | 'api';

/**
 * The check a token request failed, in the order the token endpoint applies them. Stable identifiers for tests;
 * `error_description` says the same thing in words.
 */
export type TokenRequestRule =
  | 'method'
  | 'content-type'
  | 'body-size'
  | 'duplicate-parameter'
  | 'grant_type'
  | 'client_id'
  | 'token'
  | 'token-encoding'
  | 'jwt-format'
  | 'alg'
  | 'typ'
  | 'claims'
  | 'iss'
  | 'signature'
  | 'sub'
  | 'status'
  | 'aud'
  | 'lifetime'
  | 'nbf-before-iat'
  | 'expired'
  | 'not-yet-valid'
  | 'jti-replay'
  /** User grants (`authorization_code`, `refresh_token`). */
  | 'code'
  | 'redirect_uri'
  | 'code_verifier'
  | 'refresh_token';

/** One request received by the token endpoint. Holds decoded header and claims, never the JWT or a token. */
export interface TokenRequestRecord {
  /** Emulator time (ms) when the request arrived. */
  at: number;
  method: string;
  contentType?: string;
  grantType?: string;
  clientId?: string;
  /** The assertion's decoded protected header, when it could be decoded. */
  header?: Record<string, unknown>;
  /** The assertion's decoded claims, when they could be decoded (also for rejected and faulted requests). */
  claims?: Record<string, unknown>;
  /** HTTP status sent; 0 when no response was sent (`hang`, `drop`). */
  status: number;
  verdict: 'accepted' | 'rejected' | 'fault';
  /** The rule that rejected the request. */
  rule?: TokenRequestRule;
  /**
   * Every assertion rule's verdict, in the order the endpoint applies them, once the assertion could be decoded
   * (absent for request-level refusals and faults). `rule` above is the first of them that failed.
   */
  rules?: readonly ClaimRuleVerdict[];
  /** The kind of the injected fault that answered instead of the endpoint. */
  fault?: EmulatorFault['kind'];
  error?: string;
  errorDescription?: string;
  /** The integration the request authenticated as (set once the signature verified). */
  machineId?: string;
}

export interface EmulatorCounters {
  /** Requests to the token endpoint. `total` is the sum of the other three. */
  exchanges: { total: number; accepted: number; rejected: number; faulted: number };
  /**
   * Requests to anything but the token endpoint. `total` also counts answers outside the other buckets
   * (404, 405, 400 for an unreadable body).
   */
  apiCalls: {
    total: number;
    ok: number;
    unauthorized: number;
    forbidden: number;
    faulted: number;
    /** 429s sent on API routes: by an integration's rate limit or by a `retry-after` fault. */
    throttled: number;
    /**
     * Per machineId: the most API requests accepted (authenticated, not throttled) in any one second of emulator
     * time. What a measurement reads to check that a fleet kept to its limit.
     */
    maxPerSecond: Record<string, number>;
  };
  /**
   * The API's `Idempotency-Key` journal: distinct keys answered, requests answered again from the journal (processed
   * no second time), keys reused for a different request (422). A reset zeroes the counts; the journal keeps its keys.
   */
  idempotency: { keys: number; duplicates: number; mismatches: number };
}
