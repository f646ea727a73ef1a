import type { LoggerService } from '@nestjs/common';
import type { Clock } from '../../platform-auth.clock.js';
import type { RateLimitStatus } from '../../token/token-status.types.js';
import type { CallGate } from '../call-gate.js';
import { LocalRateGate, type WaitListener } from './local-rate.gate.js';
import type { ResolvedRateLimit } from './rate-limit.options.js';
import type { SharedBucketChannel } from './redis-rate.bucket.js';
import { SharedRateGate } from './shared-rate.gate.js';

/** What bounds one request's wait, and whose limit it is (for the error). */
export interface RateLimitLimits {
  readonly integration: string;
  readonly maxWaitMs: number;
}

/** What the gate reports as it happens: each request's wait, and each change between shared and fallback. */
export interface RateLimitEvents {
  readonly waited: WaitListener;
  readonly modeChanged: (mode: 'shared' | 'fallback') => void;
}

/** A `CallGate` with a rate limit: its status, and the start and stop of what it runs in the background. */
export interface RateLimitGate extends CallGate {
  status(): RateLimitStatus;
  start(): void;
  close(): void;
}

interface RateLimitGateInput {
  readonly settings: ResolvedRateLimit;
  readonly integration: string;
  readonly clock: Clock;
  /** The shared store's Redis, when there is one that runs scripts: then the fleet shares the limit. */
  readonly shared?: SharedBucketChannel;
  readonly events: RateLimitEvents;
  readonly logger: Pick<LoggerService, 'log' | 'warn'>;
}

/** The integration's gate: shared by the fleet through the store's Redis when there is one, else this process's. */
export function createRateLimitGate(input: RateLimitGateInput): RateLimitGate {
  const { settings, integration, clock, shared, events, logger } = input;
  const limits = { integration, maxWaitMs: settings.maxWaitMs };
  if (shared) return new SharedRateGate(settings.shape, shared, clock, limits, events, logger);
  return new LocalRateGate(settings.shape, clock, limits, events.waited);
}
