import type { LoggerService } from '@nestjs/common';
import { scheduleOn, type Clock } from '../platform-auth.clock.js';
import type { PlatformAuthObserver } from '../platform-auth.observer.js';
import { certificateNotAfterMs, type CredentialsInUse } from './active-credentials.js';
import { DAY_MS, daysLeft } from './certificate.loader.js';

/** Days left at which a running app warns; each is reported once per certificate. */
const CERTIFICATE_EXPIRY_WARNING_THRESHOLDS_DAYS = [30, 14, 7, 1] as const;
/** The longest the monitor sleeps: it also picks up a swapped certificate and a clock that jumped. */
const MAX_CHECK_INTERVAL_MS = 6 * 60 * 60 * 1000;

const ROTATION_STEPS =
  'To rotate: 1) generate a new key and certificate (`platform-auth keygen`); 2) register the certificate on the system integration in the Administration Portal (one certificate per integration: the old one stops working when it is replaced); 3) put the new pair in place (update the *_PATH files with credentialsReloadIntervalMs set, call TokenProvider.rotateCredentials(), or restart). See docs/operations.md.';

/**
 * Warns while the app runs when the certificate has 30, 14, 7 and 1 days left, and once it has expired, each with
 * the rotation steps. Driven by the module's clock; the timer never keeps the process alive.
 */
export class CertificateExpiryMonitor {
  private warnedAt?: { thumbprint: string; threshold: number };
  private cancelTimer?: () => void;
  private started = false;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly credentials: CredentialsInUse,
    private readonly observer: PlatformAuthObserver,
    private readonly logger: LoggerService,
  ) {}

  start(): void {
    if (this.stopped) return;
    this.started = true;
    this.check();
  }

  /** Another pair is in use: its certificate's thresholds count from now. */
  currentChanged(): void {
    if (this.started && !this.stopped) this.check();
  }

  stop(): void {
    this.stopped = true;
    this.cancelTimer?.();
  }

  /** Warns when a threshold was crossed since the last warning for this certificate, then sleeps until the next. */
  private check(): void {
    const { credentials } = this.credentials.active;
    const notAfter = certificateNotAfterMs(credentials);
    if (notAfter === undefined) return;
    const now = this.clock.now();
    // The lowest threshold already reached; 0 stands for "expired".
    const reached =
      now >= notAfter
        ? 0
        : CERTIFICATE_EXPIRY_WARNING_THRESHOLDS_DAYS.filter((days) => notAfter - now <= days * DAY_MS).at(-1);
    const previous = this.warnedAt?.thumbprint === credentials.thumbprint ? this.warnedAt.threshold : undefined;
    if (reached !== undefined && (previous === undefined || reached < previous)) {
      this.warnedAt = { thumbprint: credentials.thumbprint, threshold: reached };
      this.warn(credentials.thumbprint, notAfter, now);
    }
    const next = [...CERTIFICATE_EXPIRY_WARNING_THRESHOLDS_DAYS.map((days) => notAfter - days * DAY_MS), notAfter].find(
      (at) => at > now,
    );
    if (next !== undefined) this.arm(Math.min(next - now, MAX_CHECK_INTERVAL_MS));
  }

  private warn(thumbprint: string, notAfter: number, now: number): void {
    const left = daysLeft(notAfter, now);
    const when = new Date(notAfter).toISOString();
    const message =
      now >= notAfter
        ? `The certificate (thumbprint ${thumbprint}) expired on ${when}; the platform refuses its assertions.`
        : `The certificate (thumbprint ${thumbprint}) expires in ${left} day(s), on ${when}.`;
    this.logger.warn(`${message} ${ROTATION_STEPS}`);
    this.observer.certificateExpiring(left);
  }

  private arm(delayMs: number): void {
    this.cancelTimer?.();
    this.cancelTimer = scheduleOn(this.clock, delayMs, () => {
      this.cancelTimer = undefined;
      if (!this.stopped) this.check();
    });
  }
}
