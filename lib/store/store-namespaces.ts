import { createHash } from 'node:crypto';
import type { ActiveCredentials } from '../credentials/active-credentials.js';
import type { LoadedCredentials } from '../credentials/credentials.loader.js';

/** What names the platform's side of an integration: where its tokens come from and for whom. */
export interface NamespaceInput {
  readonly tokenUrl: string;
  readonly audience: string;
}

/** The pairs a process holds right now: the one in use and the one standing by (the credential lifecycle). */
export interface HeldPairs {
  readonly active: ActiveCredentials;
  readonly next: LoadedCredentials | undefined;
}

/**
 * Bumped whenever what a namespace is made of changes: entries written under an earlier scheme then sit under other
 * key names, so a replica of this version never reads them (they lapse with their TTL) and never misreads them.
 */
const LABEL = 'platform-auth store namespace v2';
/** A few pairs over a process's life (current, next, a rotation): the oldest is forgotten past this. */
const REMEMBERED = 8;

/**
 * The namespaces of one integration's entries in the shared store, one per key pair. A namespace is a hash of the
 * token URL, the audience, the machineId, the certificate's thumbprint and a signature by the pair's private key over
 * all of these. RSASSA-PKCS1-v1_5 is deterministic, so every replica holding the key computes the same namespace,
 * while nobody without the key can: a tenant or integration configured with another's machineId (a typo), or even
 * with another's certificate, computes a namespace of its own and never reads, waits on, fails with or is held by
 * another's token, lock, failure record or rate bucket. A signature from a PKCS#11 token or a `signer` is checked
 * against the certificate as every assertion's is, so a key that does not match its certificate fails here too.
 *
 * One signature per pair and machineId for the life of the process, computed on first use.
 */
export class StoreNamespaces {
  private readonly known = new Map<string, Promise<string>>();

  constructor(
    private readonly identity: NamespaceInput,
    private readonly pairs: HeldPairs,
  ) {}

  /** The namespace of the pair in use. */
  active(): Promise<string> {
    const { machineId, credentials } = this.pairs.active;
    return this.of(machineId, credentials);
  }

  /** The namespace of the pair standing by, when there is one: its holders may use what it minted. */
  next(): Promise<string | undefined> {
    const next = this.pairs.next;
    return next ? this.of(this.pairs.active.machineId, next) : Promise.resolve(undefined);
  }

  /** The pairs held now, to tell afterwards which of them an exchange's token was minted by. */
  snapshot(): HeldPairs {
    return { active: this.pairs.active, next: this.pairs.next };
  }

  /**
   * The namespace of the pair that minted the token of an exchange that started with `before`: the pair in use then,
   * or its next pair when the platform refused the one and accepted the other within the exchange. `undefined` when
   * a reload or a rotation changed the pairs meanwhile: which one signed is not known, so the token is not shared.
   */
  mintedBy(before: HeldPairs): Promise<string | undefined> {
    const now = this.pairs.active;
    const switched =
      before.next !== undefined &&
      now.machineId === before.active.machineId &&
      now.credentials.thumbprint === before.next.thumbprint;
    if (now !== before.active && !switched) return Promise.resolve(undefined);
    return this.of(now.machineId, now.credentials);
  }

  /** The namespace of `pair` under `machineId`. */
  of(machineId: string, pair: LoadedCredentials): Promise<string> {
    const id = `${machineId}\0${pair.thumbprint}`;
    const known = this.known.get(id);
    if (known) return known;
    const computed = this.compute(machineId, pair);
    // A failed signature (a token that went away) is tried again next time, not remembered.
    computed.catch(() => this.known.delete(id));
    this.known.set(id, computed);
    if (this.known.size > REMEMBERED) this.known.delete(this.known.keys().next().value!);
    return computed;
  }

  private async compute(machineId: string, pair: LoadedCredentials): Promise<string> {
    const { tokenUrl, audience } = this.identity;
    const parts = [LABEL, tokenUrl, audience, machineId, pair.thumbprint];
    const proof = await pair.key.sign(new TextEncoder().encode(parts.join('\0')));
    const hash = createHash('sha256');
    for (const part of parts) hash.update(part).update('\0');
    return hash.update(proof).digest('base64url').slice(0, 32);
  }
}
