import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { ThumbprintAlgorithm } from '../../options/platform-auth-options.interface.js';
import { AUTHORIZE_PATH, DEFAULT_TOKEN_LIFETIME_SECONDS, TOKEN_PATH } from './emulator.constants.js';
import { AccessTokenStore } from './emulator.access-tokens.js';
import { AssertionVerifier } from './emulator.assertion-verifier.js';
import { answerWithFault, FaultQueues } from './emulator.faults.js';
import { writeResponse } from './emulator.http.js';
import { EmulatorInspector } from '../inspector/emulator.inspector.js';
import { EmulatorControl } from './emulator.control.js';
import { PlaceholderApi } from './emulator.placeholder-api.js';
import { IntegrationRegistry } from './emulator.registry.js';
import { TokenEndpoint } from './emulator.token-endpoint.js';
import { UserFlow } from '../user-flow/emulator.user-flow.js';
import type {
  RegisteredUserClient,
  RegisterUserClientInput,
  TestUser,
  UserFlowRecord,
} from '../user-flow/user-flow.types.js';
import type {
  EmulatedIntegration,
  EmulatorCounters,
  EmulatorFault,
  FaultTarget,
  IntegrationPermission,
  PlatformEmulatorOptions,
  RegisteredIntegration,
  RegisterIntegrationInput,
  TokenRequestRecord,
} from './emulator.types.js';
import { checkOptions, checkTokenLifetime, emptyCounters, emulatedIntegration } from './emulator.options.js';
import { createTestCredentials } from '../test-credentials.util.js';

const DEFAULT_JOURNAL_LIMIT = 1000;
const LISTEN_BACKLOG = 4096;

/**
 * The platform's side of docs/platform-contract.md, on a real HTTP server on loopback: a registry of system
 * integrations, the token endpoint with every assertion rule, access tokens checked by placeholder protected routes,
 * and controls for tests (clock offset, one-shot faults, a journal, counters). Every instance is independent of every other.
 *
 * ```ts
 * const platform = await PlatformEmulator.start();
 * const integration = await platform.createIntegration();
 * // PlatformAuthModule.forRoot({ ...integration.moduleOptions })
 * await platform.close();
 * ```
 */
export class PlatformEmulator {
  /** `http://127.0.0.1:PORT`, without a trailing slash: the `baseUrl` to configure. */
  readonly url: string;
  readonly tokenUrl: string;
  /** Where apps send browsers to sign in (Authorization Code + PKCE). */
  readonly authorizeUrl: string;
  /** The `aud` the token endpoint expects. */
  readonly audience: string;

  private readonly baseNow: () => number;
  private clockOffsetMs: number;
  private tokenLifetimeSeconds: number;
  private readonly thumbprintAlgorithm: ThumbprintAlgorithm;
  private readonly acceptCompactJwt: boolean;
  private readonly journalLimit: number;
  private readonly journalEntries: TokenRequestRecord[] = [];
  private countersState: EmulatorCounters = emptyCounters();
  private readonly registry: IntegrationRegistry;
  private readonly accessTokens: AccessTokenStore;
  private readonly tokenEndpoint: TokenEndpoint;
  private readonly placeholderApi: PlaceholderApi;
  private readonly userFlow: UserFlow;
  private readonly faults = new FaultQueues();
  private readonly inspector?: EmulatorInspector;
  private readonly control?: EmulatorControl;
  private readonly onCertificateReplaced?: PlatformEmulatorOptions['onCertificateReplaced'];
  /** Aborted by `close()`, which cancels pending `delay` faults. */
  private readonly shutdown = new AbortController();
  private closed?: Promise<void>;

  private constructor(
    private readonly server: Server,
    url: string,
    options: PlatformEmulatorOptions,
  ) {
    this.url = url;
    this.tokenUrl = url + TOKEN_PATH;
    this.authorizeUrl = url + AUTHORIZE_PATH;
    this.audience = options.audience ?? new URL(url).host;
    this.baseNow = options.now ?? Date.now;
    this.clockOffsetMs = options.clockOffsetMs ?? 0;
    this.tokenLifetimeSeconds = options.tokenLifetimeSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS;
    this.thumbprintAlgorithm = options.thumbprintAlgorithm ?? 'sha1';
    const encodings = options.tokenEncodings ?? ['jwt', 'base64'];
    this.acceptCompactJwt = encodings.includes('jwt');
    this.journalLimit = options.journalLimit ?? DEFAULT_JOURNAL_LIMIT;

    const now = (): number => this.now();
    this.registry = new IntegrationRegistry(this.thumbprintAlgorithm);
    this.accessTokens = new AccessTokenStore(now);
    this.userFlow = new UserFlow({
      now,
      issuer: url,
      machineTokens: this.accessTokens,
      tokenLifetimeSeconds: () => this.tokenLifetimeSeconds,
      invalidClientStatus: options.invalidClientStatus ?? 400,
      journalLimit: this.journalLimit,
      maxPendingSignIns: options.maxPendingSignIns,
    });
    this.tokenEndpoint = new TokenEndpoint({
      verifier: new AssertionVerifier({
        registry: this.registry,
        audience: this.audience,
        acceptCompactJwt: this.acceptCompactJwt,
        acceptBase64: encodings.includes('base64'),
        now,
        leewayMs: (options.leewaySeconds ?? 0) * 1000,
      }),
      tokens: this.accessTokens,
      tokenLifetimeSeconds: () => this.tokenLifetimeSeconds,
      invalidClientStatus: options.invalidClientStatus ?? 400,
      userGrants: this.userFlow.grants,
    });
    this.placeholderApi = new PlaceholderApi(this.accessTokens, this.registry);
    if (options.inspector) {
      const parts = { registry: this.registry, tokens: this.accessTokens, faults: this.faults };
      this.inspector = new EmulatorInspector({
        emulator: this,
        ...parts,
        now,
        clockOffsetMs: () => this.clockOffsetMs,
        signInSteps: () => this.userJournal,
      });
    }
    if (options.control) {
      this.control = new EmulatorControl({
        url,
        registry: this.registry,
        replaceCertificate: (machineId, pem) => this.replaceCertificate(machineId, pem),
      });
    }
    this.onCertificateReplaced = options.onCertificateReplaced;
    server.on('request', (req, res) => void this.handle(req, res));
  }

  /** Listens on `host:port` (default `127.0.0.1`, a random free port) and resolves once connections are accepted. */
  static async start(options: PlatformEmulatorOptions = {}): Promise<PlatformEmulator> {
    checkOptions(options);
    const host = options.host ?? '127.0.0.1';
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // Node's default backlog (511) overflows when a test fires ~800 requests at once on fresh connections: the
      // kernel drops the extra SYNs and the client retries them a full second later.
      server.listen({ port: options.port ?? 0, host, backlog: LISTEN_BACKLOG }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const { port } = server.address() as AddressInfo;
    const urlHost = host.includes(':') ? `[${host}]` : host;
    return new PlatformEmulator(server, `http://${urlHost}:${port}`, options);
  }

  /** Adds a system integration, as the Administration Portal does. Throws when its certificate is already registered. */
  registerIntegration(input: RegisterIntegrationInput): RegisteredIntegration {
    return this.registry.register(input);
  }

  /** A throwaway key and certificate, registered as a new integration, with the settings an app needs to use it. */
  async createIntegration(input: Omit<RegisterIntegrationInput, 'certificatePem'> = {}): Promise<EmulatedIntegration> {
    // Validity is centred on the client's clock (`now`, without the offset): the library checks it at start-up.
    const credentials = await createTestCredentials({
      thumbprintAlgorithm: this.thumbprintAlgorithm,
      now: this.baseNow(),
    });
    const integration = this.registerIntegration({ ...input, certificatePem: credentials.certificatePem });
    return emulatedIntegration(integration, credentials, {
      url: this.url,
      audience: this.audience,
      thumbprintAlgorithm: this.thumbprintAlgorithm,
      acceptCompactJwt: this.acceptCompactJwt,
    });
  }

  /** Registers a public client for user sign-in: its id and the exact redirect URIs it may use. */
  registerUserClient(input: RegisterUserClientInput): RegisteredUserClient {
    return this.userFlow.directory.registerClient(input);
  }

  /** Adds (or replaces, by id) someone who can sign in on the emulator's page. */
  addTestUser(user: TestUser): void {
    this.userFlow.directory.addUser(user);
  }

  get testUsers(): TestUser[] {
    return this.userFlow.directory.allUsers;
  }

  /** The steps of user sign-ins, oldest first: authorize, sign-in, token, me (a snapshot; no codes or tokens). */
  get userJournal(): readonly UserFlowRecord[] {
    return this.userFlow.journal;
  }

  /** Registers a new certificate on an existing integration (the old one stops working): a rotation's portal step. */
  replaceCertificate(machineId: string, certificatePem: string): RegisteredIntegration {
    const integration = this.registry.replaceCertificate(machineId, certificatePem);
    this.onCertificateReplaced?.(integration, certificatePem);
    return integration;
  }

  setIntegrationStatus(machineId: string, status: string): void {
    this.registry.setStatus(machineId, status);
  }

  setPermissions(machineId: string, permissions: IntegrationPermission[]): void {
    this.registry.setPermissions(machineId, permissions);
  }

  /** Emulator time becomes `now() + ms`: the platform's clock ahead of (positive) or behind the client's. */
  setClockOffset(ms: number): void {
    if (!Number.isFinite(ms)) throw new Error(`setClockOffset: ms must be a finite number, got ${String(ms)}`);
    this.clockOffsetMs = ms;
  }

  /** `expires_in` of tokens issued from now on; tokens already issued keep theirs. */
  setTokenLifetime(seconds: number): void {
    checkTokenLifetime(seconds, 'setTokenLifetime');
    this.tokenLifetimeSeconds = seconds;
  }

  /** True when the token was usable and is not any more. */
  revokeToken(accessToken: string): boolean {
    return this.accessTokens.revoke(accessToken);
  }

  /** Revokes every usable token; returns how many there were. */
  revokeAllTokens(): number {
    return this.accessTokens.revokeAll();
  }

  /** Queues a one-shot fault for the next request to `target`: the token endpoint (default), or anything else. */
  injectFault(fault: EmulatorFault, target: FaultTarget = 'token'): void {
    this.faults.push(fault, target);
  }

  /** The inspector page (`inspector: true`), `url + '/_emulator/'`; undefined without it. */
  get inspectorUrl(): string | undefined {
    return this.inspector?.url;
  }

  /** Token requests received, oldest first (a snapshot; at most `journalLimit` entries). */
  get journal(): readonly TokenRequestRecord[] {
    return Object.freeze([...this.journalEntries]);
  }

  /** A snapshot of the counters. */
  get counters(): EmulatorCounters {
    return structuredClone(this.countersState);
  }

  resetCounters(): void {
    this.countersState = emptyCounters();
  }

  /**
   * Stops listening, destroys every connection (keep-alive and hanging ones included) and cancels pending delays.
   * Safe to call more than once.
   */
  close(): Promise<void> {
    this.closed ??= new Promise<void>((resolve) => {
      this.shutdown.abort();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    return this.closed;
  }

  private now(): number {
    return this.baseNow() + this.clockOffsetMs;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const receivedAt = this.now();
    const pathname = pathnameOf(req);
    // Controls and probes are not calls to the platform's API: they take no fault and count as nothing.
    if (this.control && EmulatorControl.serves(pathname)) {
      return this.control.answer(req, pathname).then(
        (response) => writeResponse(res, this.now(), response),
        () => void res.destroy(),
      );
    }
    if (pathname === TOKEN_PATH && isProbe(req)) {
      return writeResponse(res, this.now(), { status: 405, headers: { allow: 'POST' } });
    }
    // The inspector is not part of the platform: it takes no fault and counts as no API call.
    if (this.inspector && EmulatorInspector.serves(pathname)) {
      // A client that went away mid-form leaves nobody to answer.
      return this.inspector.handle(req, res, pathname).catch(() => void res.destroy());
    }
    const isTokenRequest = pathname === TOKEN_PATH;
    let fault = this.faults.take(isTokenRequest ? 'token' : 'api');
    try {
      if (fault?.kind === 'delay') {
        await delay(fault.ms, undefined, { signal: this.shutdown.signal, ref: false });
        fault = undefined;
      }
      if (isTokenRequest) await this.handleTokenRequest(req, res, receivedAt, fault);
      else await this.handleApiRequest(req, res, fault);
    } catch {
      // A client that went away, or a delay cancelled by close(), leaves nobody to answer; anything else is a bug
      // of the emulator, which the client should see as a server error rather than as a hang.
      if (!res.headersSent && !res.destroyed)
        writeResponse(res, this.now(), { status: 500, body: { error: 'server_error' } });
    }
  }

  private async handleTokenRequest(
    req: IncomingMessage,
    res: ServerResponse,
    receivedAt: number,
    fault: Exclude<EmulatorFault, { kind: 'delay' }> | undefined,
  ): Promise<void> {
    const request = await this.tokenEndpoint.receive(req);
    const exchanges = this.countersState.exchanges;
    exchanges.total += 1;
    if (fault) {
      const status = answerWithFault(fault, res, this.now());
      exchanges.faulted += 1;
      this.record({
        at: receivedAt,
        ...this.tokenEndpoint.summarize(request),
        status,
        verdict: 'fault',
        fault: fault.kind,
      });
      return;
    }
    const { response, record } = await this.tokenEndpoint.answer(request);
    writeResponse(res, this.now(), response);
    if (record.verdict === 'accepted') exchanges.accepted += 1;
    else exchanges.rejected += 1;
    this.record({ at: receivedAt, ...record });
  }

  private async handleApiRequest(
    req: IncomingMessage,
    res: ServerResponse,
    fault: Exclude<EmulatorFault, { kind: 'delay' }> | undefined,
  ): Promise<void> {
    const apiCalls = this.countersState.apiCalls;
    apiCalls.total += 1;
    if (fault) {
      apiCalls.faulted += 1;
      answerWithFault(fault, res, this.now());
      return;
    }
    const pathname = pathnameOf(req);
    const { response, outcome } = this.userFlow.handles(pathname)
      ? { response: await this.userFlow.answer(req, pathname), outcome: 'other' as const }
      : await this.placeholderApi.answer(req, pathname);
    writeResponse(res, this.now(), response);
    if (outcome !== 'other') apiCalls[outcome] += 1;
  }

  private record(entry: TokenRequestRecord): void {
    this.journalEntries.push(entry);
    if (this.journalEntries.length > this.journalLimit) {
      this.journalEntries.splice(0, this.journalEntries.length - this.journalLimit);
    }
  }
}

/**
 * A HEAD or OPTIONS on the token endpoint asks whether it is there (platform-auth doctor's reachability probe) and
 * carries no assertion: a real platform answers it without counting an exchange, and so does the emulator.
 */
function isProbe(req: IncomingMessage): boolean {
  return req.method === 'HEAD' || req.method === 'OPTIONS';
}

/** The request-target without its query, compared as sent: `//x` stays a path instead of becoming a host. */
function pathnameOf(req: IncomingMessage): string {
  return (req.url ?? '/').split(/[?#]/, 1)[0];
}
