import type { SendCommand } from '../../store/redis-client.factory.js';
import { UnexpectedReplyError } from '../../store/redis-bounded.reader.js';
import { boundedStoreOperation } from '../../store/store-operation.bounded.js';
import type { RateLimitShape } from './rate-limit.schedule.js';

/**
 * The fleet's rate limit in one round trip: the replica's heartbeat, then (for `take`) the same rules as
 * `RateLimitSchedule` on the shared state (a turn the window or a hold pushed back empties the bucket), then the
 * reservation. Time is the Redis server's (`TIME`): every replica measures the one bucket by one clock, so skew
 * between replicas cannot let them exceed the limit together. A hold comes in as a delay and is stored on that clock
 * too, in a key of its own that expires when the hold ends: a hold never outlives its delay in Redis. The reply is
 * `{granted, waitMs, replicasSeen}`; a wait beyond `maxWaitMs` is not reserved. Numbers go back as text: Redis would
 * truncate a Lua number to an integer.
 */
const RATE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op, replica, seenMs = ARGV[1], ARGV[2], tonumber(ARGV[3])
redis.call('ZADD', KEYS[3], now, replica)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - seenMs)
redis.call('PEXPIRE', KEYS[3], seenMs)
local replicas = redis.call('ZCARD', KEYS[3])
local hold = tonumber(redis.call('GET', KEYS[4])) or 0
if op == 'seen' then return {1, '0', replicas} end
if op == 'hold' then
  local delay = tonumber(ARGV[4])
  if delay > 0 and now + delay > hold then
    redis.call('SET', KEYS[4], string.format('%.3f', now + delay), 'PX', delay)
  end
  return {1, '0', replicas}
end
local rate, burst, perWindow, windowMs, maxWaitMs =
  tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local interval = 1000 / rate
local tat = tonumber(redis.call('HGET', KEYS[1], 'tat')) or 0
local paced = math.max(now, tat - (burst - 1) * interval)
local count = redis.call('LLEN', KEYS[2])
if count > 0 then paced = math.max(paced, tonumber(redis.call('LINDEX', KEYS[2], -1))) end
local held = hold
if count >= perWindow then
  held = math.max(held, tonumber(redis.call('LINDEX', KEYS[2], count - perWindow)) + windowMs)
end
local at = math.max(paced, held)
local wait = at - now
if wait > maxWaitMs then return {0, string.format('%.3f', wait), replicas} end
if held > paced then tat = math.max(tat, at + (burst - 1) * interval) end
tat = math.max(tat, at) + interval
redis.call('HSET', KEYS[1], 'tat', string.format('%.3f', tat))
redis.call('RPUSH', KEYS[2], string.format('%.3f', at))
redis.call('LTRIM', KEYS[2], -perWindow, -1)
local ttl = math.ceil(math.max(tat, at + windowMs) - now) + 1000
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return {1, string.format('%.3f', wait), replicas}`;

/** Where the fleet's bucket lives: the store's connection, the integration's key base, the bound on one operation. */
export interface SharedBucketChannel {
  readonly send: SendCommand;
  /**
   * `<keyPrefix>{<namespace>}`: the hash tag keeps every key of the bucket in one Cluster slot. Read at each use: the
   * store moves it to the namespace of the key pair whose token is in use.
   */
  readonly keyBase: string;
  readonly operationTimeoutMs: number;
}

interface BucketReply {
  readonly granted: boolean;
  /** How long until the request may go (granted), or would have waited (not granted), ms. */
  readonly waitMs: number;
  /** Replicas that reached the store within the heartbeat window, this one included. */
  readonly replicasSeen: number;
}

/**
 * The fleet's token bucket of one integration in Redis. Every call is one bounded `EVAL`; a failure or a late answer
 * rejects with the store layer's `StoreUnavailable`, which the gate turns into its fallback.
 */
export class RedisRateBucket {
  private keys: readonly [string, string, string, string] = ['', '', '', ''];

  constructor(
    private readonly channel: SharedBucketChannel,
    private readonly shape: RateLimitShape,
    private readonly replica: string,
    private readonly seenMs: number,
  ) {}

  private keysNow(): readonly [string, string, string, string] {
    const base = `${this.channel.keyBase}:rate`;
    if (this.keys[0] !== base) this.keys = [base, `${base}:window`, `${base}:replicas`, `${base}:hold`];
    return this.keys;
  }

  take(maxWaitMs: number): Promise<BucketReply> {
    const { requestsPerSecond, burst, perWindow, windowMs } = this.shape;
    return this.run('take', [requestsPerSecond, burst, perWindow, windowMs, maxWaitMs]);
  }

  /** No request of the fleet goes for `delayMs` (measured from the store's now); a finite delay, whole ms. */
  hold(delayMs: number): Promise<BucketReply> {
    return this.run('hold', [Number.isFinite(delayMs) ? Math.max(0, Math.ceil(delayMs)) : 0]);
  }

  /** The heartbeat alone, so a replica that sends nothing still counts when the others work out their share. */
  seen(): Promise<BucketReply> {
    return this.run('seen', []);
  }

  private run(op: string, numbers: readonly number[]): Promise<BucketReply> {
    const keys = this.keysNow();
    const args = ['EVAL', RATE_SCRIPT, '4', ...keys, op, this.replica, String(this.seenMs), ...numbers.map(String)];
    return boundedStoreOperation(
      async () => parsed(await this.channel.send(keys[0], args)),
      this.channel.operationTimeoutMs,
    );
  }
}

function parsed(reply: unknown): BucketReply {
  const [granted, waitMs, replicas] = Array.isArray(reply) ? (reply as unknown[]) : [];
  const wait = Number(waitMs);
  if ((granted !== 0 && granted !== 1) || !Number.isFinite(wait) || !Number.isSafeInteger(replicas)) {
    throw new UnexpectedReplyError('UNEXPECTED_REPLY');
  }
  return { granted: granted === 1, waitMs: Math.max(0, wait), replicasSeen: Math.max(1, replicas as number) };
}
