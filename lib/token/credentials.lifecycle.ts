import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../platform-auth.clock.js';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import type { ActiveCredentials, ReloadedPairs } from '../credentials/active-credentials.js';
import type { LoadedCredentials } from '../credentials/credentials.loader.js';
import { CredentialsWatch, type WatchedFiles } from '../credentials/credentials.watch.js';
import type { CredentialReloadStatus } from '../credentials/credentials.reloader.js';
import { AssertionSigner, type SignerSettings } from './assertion.signer.js';
import {
  thumbprintPrefix,
  type ExchangeSigners,
  type NextPairCandidate,
  type PairSwitchRecord,
} from './next-pair.switch.js';

/**
 * - `current`: the pair the configuration gives (options, files, or the last rotation) is in use; no next pair.
 * - `current+next`: the same, with a next pair standing by for a "not registered" refusal.
 * - `switched`: the platform refused the configured pair as not registered and accepted the next one, which is in
 *   use; the configuration still names the refused pair until its files catch up (or a rotation).
 * - `switched+next`: the same, and the next pair's files already hold a new next pair.
 */
type CredentialsLifecycleState = 'current' | 'current+next' | 'switched' | 'switched+next';

interface CredentialsLifecycleInput {
  readonly settings: SignerSettings;
  readonly clock: Clock;
  readonly machineId: string;
  readonly credentials: LoadedCredentials;
  readonly next?: LoadedCredentials;
  readonly files: WatchedFiles;
  readonly observer: PlatformAuthObserver;
  readonly logger: LoggerService;
}

/** The credentials part of `status()`, besides the reload state. */
interface CredentialsDescription {
  readonly active: ActiveCredentials;
  readonly next?: LoadedCredentials;
  readonly switched?: PairSwitchRecord;
}

/**
 * The one owner of the integration's credentials over time: the pair in use, the next pair, and every transition
 * between them (docs/architecture.md lists them). The file reloader and the rotation bring pairs that passed every
 * start-up check; an exchange brings the platform's acceptance of the next pair. This unit decides, changes the
 * pairs in one assignment, closes a key it replaces, says what happened (one log line, one observer event), and
 * remembers every pair the platform refused as not registered so that no reload or rotation puts it back, whatever
 * bytes it comes in (a pair is its certificate thumbprint). It builds every signer: one for the pair in use, which
 * reads the pair at each assertion, and one per next pair.
 */
export class CredentialsLifecycle implements ReloadedPairs {
  /** The signer of the pair in use; it reads the pair at each assertion, so a transition applies from the next one. */
  readonly signer: AssertionSigner;
  // True private fields: the keys must not show when someone logs or inspects the lifecycle.
  #active: ActiveCredentials;
  #next?: { readonly pair: LoadedCredentials; readonly signer: AssertionSigner };
  #switched?: PairSwitchRecord;
  /** Thumbprints of pairs the platform refused as not registered, after which it accepted another. */
  readonly #refused = new Set<string>();
  readonly #watch: CredentialsWatch;
  readonly #input: CredentialsLifecycleInput;

  constructor(input: CredentialsLifecycleInput) {
    this.#input = input;
    this.#active = { machineId: input.machineId, credentials: input.credentials, activatedAtMs: input.clock.now() };
    this.signer = new AssertionSigner(input.settings, input.clock, this);
    this.#setNext(input.next);
    this.#watch = new CredentialsWatch(input.files, this, input.clock, input.observer, input.logger);
  }

  get active(): ActiveCredentials {
    return this.#active;
  }

  get next(): LoadedCredentials | undefined {
    return this.#next?.pair;
  }

  get state(): CredentialsLifecycleState {
    const phase = this.#switched ? 'switched' : 'current';
    return this.#next ? `${phase}+next` : phase;
  }

  describe(): CredentialsDescription {
    return { active: this.#active, next: this.#next?.pair, switched: this.#switched };
  }

  reloadStatus(): CredentialReloadStatus {
    return this.#watch.reloadStatus();
  }

  /** Starts reading the files and watching the certificate's expiry. */
  start(): void {
    this.#watch.start();
  }

  stop(): void {
    this.#watch.stop();
  }

  /** After everything that could sign has stopped: a PKCS#11 key's sessions end here. */
  async close(): Promise<void> {
    await this.#active.credentials.key.close();
    await this.#next?.pair.key.close();
  }

  /** What the next exchange signs with. */
  signers(): ExchangeSigners {
    const next = this.#next;
    if (!next) return { current: this.signer };
    const candidate: NextPairCandidate = {
      signer: next.signer,
      thumbprint: next.pair.thumbprint,
      accepted: () => this.#switchToNext(next.pair),
    };
    return { current: this.signer, next: candidate };
  }

  /** Signers for a rotation's test exchange: the candidate pair only, under `machineId`. */
  candidateSigners(machineId: string, pair: LoadedCredentials): ExchangeSigners {
    const active = { machineId, credentials: pair, activatedAtMs: this.#input.clock.now() };
    return { current: new AssertionSigner(this.#input.settings, this.#input.clock, { active }) };
  }

  /** Why `pair` may not be put in use or stand by as the next pair, or `undefined` when it may. */
  refusal(pair: LoadedCredentials): string | undefined {
    if (!this.#refused.has(pair.thumbprint)) return undefined;
    return `holds the pair the platform refused as not registered (thumbprint ${thumbprintPrefix(pair.thumbprint)}); the pair in use (thumbprint ${thumbprintPrefix(this.#active.credentials.thumbprint)}) stays`;
  }

  /** Transition `reload`: the current files changed. Files that hold the pair in use end a switch (`promote`). */
  reloaded(pair: LoadedCredentials): string | undefined {
    const refusal = this.refusal(pair);
    if (refusal) return this.#discard(pair, refusal);
    const previous = this.#active.credentials.thumbprint;
    this.#putInUse(this.#active.machineId, pair);
    this.#input.observer.credentialsChanged('reloaded');
    this.#input.logger.log(
      pair.thumbprint === previous
        ? `Credential files now hold the pair in use (thumbprint ${pair.thumbprint}); nothing changes for the platform.`
        : `Credentials reloaded from files: assertions now carry thumbprint ${pair.thumbprint} (was ${previous}); the cached token is used until it expires.`,
    );
    return undefined;
  }

  /** Transition `reload next`: the next pair's files changed (`undefined`: removed). */
  nextReloaded(pair: LoadedCredentials | undefined): string | undefined {
    const refusal = pair && this.refusal(pair);
    if (refusal) return this.#discard(pair, refusal);
    this.#setNext(pair);
    if (pair) {
      this.#input.observer.credentialsChanged('reloaded');
      this.#input.logger.log(`The next pair was reloaded from files: thumbprint ${pair.thumbprint}.`);
    } else {
      // Said also when the process already switched to that pair: removing the files is how a promotion ends.
      this.#input.logger.log(`The next pair's files were removed: there is no next pair now.`);
    }
    return undefined;
  }

  /**
   * Transition `rotate`: `rotateCredentials()` checked the pair and the platform accepted it. Returns whether the
   * machineId changed (a cut-over to another integration).
   */
  rotated(machineId: string, pair: LoadedCredentials): boolean {
    const previous = this.#active;
    this.#putInUse(machineId, pair);
    this.#input.logger.log(
      `Credentials rotated: assertions now carry thumbprint ${pair.thumbprint} (was ${previous.credentials.thumbprint}); the cached token is used until it expires.`,
    );
    this.#input.observer.credentialsChanged('rotated');
    return machineId !== previous.machineId;
  }

  /**
   * Transition `switch`: the platform refused the pair in use as not registered and accepted `next`, if it still is
   * the next pair (a reload may have replaced it, or another exchange switched already).
   */
  #switchToNext(next: LoadedCredentials): void {
    if (this.#next?.pair !== next) return;
    const { clock, logger, observer } = this.#input;
    const from = this.#active.credentials.thumbprint;
    this.#refused.add(from);
    this.#putInUse(this.#active.machineId, next);
    this.#switched = { atMs: clock.now(), from, to: next.thumbprint };
    logger.warn(
      `The platform refused the current certificate (thumbprint ${thumbprintPrefix(from)}) as not registered and accepted the next one (thumbprint ${thumbprintPrefix(next.thumbprint)}), which is now in use. Update the files: the next pair becomes the current pair (key.*), and next.* holds a new next pair or nothing.`,
    );
    observer.credentialsChanged('switched');
  }

  /** One assignment; the key it replaces is closed unless kept; a switch is over once the configuration moves. */
  #putInUse(machineId: string, pair: LoadedCredentials): void {
    const previous = this.#active.credentials.key;
    this.#active = { machineId, credentials: pair, activatedAtMs: this.#input.clock.now() };
    this.#switched = undefined;
    // A pair put in use that was the next one is no longer next.
    if (this.#next?.pair.thumbprint === pair.thumbprint) this.#setNext(undefined);
    if (previous !== pair.key) closeQuietly(previous);
    this.#watch.currentChanged();
  }

  #setNext(pair: LoadedCredentials | undefined): void {
    const previous = this.#next?.pair;
    this.#next = pair && { pair, signer: this.#nextSigner(pair) };
    if (previous && previous.key !== pair?.key && previous.key !== this.#active.credentials.key) {
      closeQuietly(previous.key);
    }
  }

  /** The next pair signs under the machineId in use, read at each assertion like the current pair's signer. */
  #nextSigner(pair: LoadedCredentials): AssertionSigner {
    const inUse = () => this.#active;
    return new AssertionSigner(this.#input.settings, this.#input.clock, {
      get active(): ActiveCredentials {
        return { ...inUse(), credentials: pair };
      },
    });
  }

  #discard(pair: LoadedCredentials, refusal: string): string {
    closeQuietly(pair.key);
    return refusal;
  }
}

function closeQuietly(key: LoadedCredentials['key']): void {
  key.close().catch(() => undefined);
}
