import type { AccessTokenStore, IssuedTokenSummary } from '../emulator/emulator.access-tokens.js';
import type { FaultQueues } from '../emulator/emulator.faults.js';
import type { IntegrationRegistry } from '../emulator/emulator.registry.js';
import type {
  EmulatorCounters,
  EmulatorFault,
  FaultTarget,
  IntegrationPermission,
  TokenRequestRecord,
} from '../emulator/emulator.types.js';

/** What the inspector reads and changes: the emulator's public controls and, read-only, its parts. */
export interface InspectorSources {
  readonly emulator: {
    readonly url: string;
    readonly tokenUrl: string;
    readonly audience: string;
    readonly journal: readonly TokenRequestRecord[];
    readonly counters: EmulatorCounters;
    setIntegrationStatus(machineId: string, status: string): void;
    setPermissions(machineId: string, permissions: IntegrationPermission[]): void;
    replaceCertificate(machineId: string, certificatePem: string): { readonly thumbprint: string };
    revokeAllTokens(): number;
    injectFault(fault: EmulatorFault, target?: FaultTarget): void;
    setClockOffset(ms: number): void;
  };
  readonly registry: IntegrationRegistry;
  readonly tokens: AccessTokenStore;
  readonly faults: FaultQueues;
  /** Emulator time, ms. */
  readonly now: () => number;
  readonly clockOffsetMs: () => number;
  /** Steps of the user sign-in flow, once the emulator has one; shown generically. */
  readonly signInSteps?: () => readonly object[];
}

/** A queued fault as the inspector shows it: bodies and header values are left out (a test may queue a token). */
interface FaultSummary {
  readonly target: FaultTarget;
  readonly kind: EmulatorFault['kind'];
  readonly status?: number;
  readonly ms?: number;
  readonly headerNames?: string[];
  readonly bodyLength?: number;
}

export interface InspectorSnapshot {
  readonly emulator: {
    readonly url: string;
    readonly tokenUrl: string;
    readonly audience: string;
    readonly time: string;
    readonly clockOffsetMs: number;
  };
  readonly integrations: Array<{
    readonly name: string;
    readonly machineId: string;
    readonly thumbprint: string;
    readonly thumbprintAlgorithm: string;
    readonly status: string;
    readonly permissions: IntegrationPermission[];
    readonly certificate: { readonly validFrom: string; readonly validTo: string; readonly validNow: boolean };
  }>;
  /** Newest first. */
  readonly journal: readonly TokenRequestRecord[];
  readonly tokens: {
    readonly count: number;
    readonly active: number;
    /** Latest expiry first, at most `TOKENS_LISTED`. */
    readonly latest: Array<Omit<IssuedTokenSummary, 'expiresAt'> & { readonly expiresAt: string }>;
  };
  readonly counters: EmulatorCounters;
  readonly faults: FaultSummary[];
  readonly signIn: readonly object[];
}

const TOKENS_LISTED = 50;

/** The data of the page, and of `journal.json`. Holds no PEM, token, code or assertion. */
export function takeSnapshot(sources: InspectorSources): InspectorSnapshot {
  const now = sources.now();
  const { emulator, registry } = sources;
  const tokens = sources.tokens.list();
  const pending = sources.faults.pending();
  return {
    emulator: {
      url: emulator.url,
      tokenUrl: emulator.tokenUrl,
      audience: emulator.audience,
      time: new Date(now).toISOString(),
      clockOffsetMs: sources.clockOffsetMs(),
    },
    integrations: registry.entries().map(({ integration, validFrom, validTo }) => ({
      name: integration.name,
      machineId: integration.machineId,
      thumbprint: integration.thumbprint,
      thumbprintAlgorithm: registry.thumbprintAlgorithm,
      status: integration.status,
      permissions: [...integration.permissions],
      certificate: {
        validFrom: validFrom.toISOString(),
        validTo: validTo.toISOString(),
        validNow: validFrom.getTime() <= now && now <= validTo.getTime(),
      },
    })),
    journal: [...emulator.journal].reverse(),
    tokens: {
      count: tokens.length,
      active: tokens.filter((token) => token.state === 'active').length,
      latest: tokens
        .slice(0, TOKENS_LISTED)
        .map((token) => ({ ...token, expiresAt: new Date(token.expiresAt).toISOString() })),
    },
    counters: emulator.counters,
    faults: (['token', 'api'] as const).flatMap((target) => pending[target].map((fault) => summarize(fault, target))),
    signIn: sources.signInSteps?.() ?? [],
  };
}

function summarize(fault: EmulatorFault, target: FaultTarget): FaultSummary {
  switch (fault.kind) {
    case 'status':
      return {
        target,
        kind: fault.kind,
        status: fault.status,
        headerNames: Object.keys(fault.headers ?? {}),
        bodyLength:
          fault.body === undefined
            ? 0
            : (typeof fault.body === 'string' ? fault.body : JSON.stringify(fault.body)).length,
      };
    case 'delay':
      return { target, kind: fault.kind, ms: fault.ms };
    default:
      return { target, kind: fault.kind };
  }
}
