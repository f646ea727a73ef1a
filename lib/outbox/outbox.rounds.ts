import { createHash } from 'node:crypto';
import type { JobsOptions, Queue } from 'bullmq';
import type { Clock } from '../index.js';
import type { StoredMessage } from './outbox.types.js';

/**
 * BullMQ's highest priority. A backlog that never empties for more rounds than this is sent in order of arrival past
 * it, until the queue is empty once.
 */
const MAX_ROUND = 2_097_152;

/** How long the queue must have been empty before the rounds start over: far longer than an `enqueue` takes. */
const RESTART_AFTER_MS = 60_000;

/**
 * The round of a new message, in one step with the look at its id: start-time fair queuing on BullMQ's priorities.
 * A message's priority is its owner's (integration's or tenant's) round: one more than the owner's last, and never
 * before the round being sent now less one (the priority of the job at the head of the queue; while nothing waits,
 * the highest round given), so an owner that had nothing waiting goes next, and one with a backlog of ten thousand
 * takes one turn per round. The queue sends lower priorities first, in order of arrival within one. The rounds start
 * over once the queue has been empty for a minute; not at once, since messages enqueued together into an empty queue
 * are all added after each of them looked at it.
 *
 * The same step claims the id for the request (its JSON's digest) until it is added: of two `enqueue`s of one new id
 * at once, the second finds the claim, and waits for the job when its request is another, to compare them.
 *
 * KEYS: the job's hash, the claim, the rounds (a hash: each owner's last, `@max` the highest given, `@empty` since
 * when nothing waits), BullMQ's prioritized set. ARGV: the owner, the prefix of the queue's job keys, the highest
 * round, how long the queue stays empty before the rounds start over (ms), the claim, how long it lasts (ms).
 * Returns `{0, data}` for a job already under the id, `{1, round}` for a new one, `{2}` when another request claimed
 * the id and is not added yet.
 */
const ROUND_SCRIPT = `
local data = redis.call('HGET', KEYS[1], 'data')
if data then return {0, data} end
if not redis.call('SET', KEYS[2], ARGV[5], 'NX', 'PX', ARGV[6]) and redis.call('GET', KEYS[2]) ~= ARGV[5] then
  return {2}
end
local state = redis.call('HMGET', KEYS[3], ARGV[1], '@max', '@empty')
local last, max, empty = tonumber(state[1]) or 0, tonumber(state[2]) or 1, tonumber(state[3])
local now = max
local head = redis.call('ZRANGE', KEYS[4], 0, 0)[1]
if head then
  now = tonumber(redis.call('HGET', ARGV[2] .. head, 'priority')) or 1
  if empty then redis.call('HDEL', KEYS[3], '@empty') end
else
  local time = redis.call('TIME')
  local ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  if empty == nil then
    redis.call('HSET', KEYS[3], '@empty', ms)
  elseif ms - empty > tonumber(ARGV[4]) then
    redis.call('DEL', KEYS[3])
    redis.call('HSET', KEYS[3], '@empty', ms)
    last, now = 0, 1
  end
end
local round = math.min(math.max(now - 1, last + 1, 1), tonumber(ARGV[3]))
if round > max then
  redis.call('HSET', KEYS[3], ARGV[1], round, '@max', round)
else
  redis.call('HSET', KEYS[3], ARGV[1], round)
end
return {1, round}`;
const ROUND_SHA = createHash('sha1').update(ROUND_SCRIPT).digest('hex');

interface ScriptOptions {
  readonly keys: string[];
  readonly arguments: string[];
}

/** The scripting commands of a node-redis client, cluster or sentinel client (each routes by the first key). */
export interface ScriptClient {
  evalSha(sha: string, options: ScriptOptions): Promise<unknown>;
  eval(script: string, options: ScriptOptions): Promise<unknown>;
}

/** Where the queue's keys are, as BullMQ's `Queue` names them. */
interface QueueKeys {
  toKey(type: string): string;
  readonly keys: Readonly<Record<string, string>>;
}

/** What the look at a new message's id found: the job already there, the new message's round, or another's claim. */
type Round = { readonly held: string } | { readonly round: number } | { readonly claimed: true };

/**
 * The stored job's data under `id` (`held`), or the round (BullMQ priority) a new message is added with, its `json`
 * claiming the id for `claimMs`; or `claimed` when another request holds the claim.
 */
async function roundOf(
  client: ScriptClient,
  queue: QueueKeys,
  message: { readonly id: string; readonly owner: string; readonly json: string },
  claimMs: number,
): Promise<Round> {
  const claim = createHash('sha256').update(message.json).digest('base64');
  const options = {
    keys: [
      queue.toKey(message.id),
      queue.toKey(`outbox:claim:${message.id}`),
      queue.toKey('outbox:rounds'),
      queue.keys.prioritized,
    ],
    arguments: [message.owner, queue.toKey(''), String(MAX_ROUND), String(RESTART_AFTER_MS), claim, String(claimMs)],
  };
  const reply = (await client.evalSha(ROUND_SHA, options).catch((error: unknown) => {
    if (!String((error as Error | undefined)?.message).startsWith('NOSCRIPT')) throw error;
    return client.eval(ROUND_SCRIPT, options);
  })) as [number, string | number];
  if (reply[0] === 0) return { held: String(reply[1]) };
  return reply[0] === 1 ? { round: Number(reply[1]) } : { claimed: true };
}

/** How often an `enqueue` looks again for the job of another request that claimed its id. */
const CLAIM_WAIT_MS = 10;

/** The owner of a message, as its id names it (`<owner hash>.<key>`); the id itself for one that names none. */
export function ownerOf(id: string): string {
  const dot = id.indexOf('.');
  return dot > 0 ? id.slice(0, dot) : id;
}

/** What storing one message takes: the queue and its client, the message, its job options, and how long to try. */
interface Storing {
  readonly queue: Queue;
  readonly client: ScriptClient;
  readonly id: string;
  readonly stored: StoredMessage;
  /** `stored` as the JSON the job holds. */
  readonly json: string;
  readonly options: JobsOptions;
  readonly clock: Clock;
  /** How long the claim lasts: as long as the caller waits. */
  readonly claimMs: number;
  /** False once the caller stopped waiting: nothing more is sent. */
  readonly live: () => boolean;
}

/**
 * Adds the message as the job `id` with its round, unless the id is taken: then the data the job holds, as the JSON
 * Redis keeps, for the caller to compare; `null` when this request is the one stored (or the same request's). While
 * another request under the id is being added, looks again until its job is there.
 */
export async function storeMessage(storing: Storing): Promise<string | null> {
  const { queue, id, json } = storing;
  while (storing.live()) {
    const found = await roundOf(storing.client, queue, { id, owner: ownerOf(id), json }, storing.claimMs);
    if ('held' in found) return found.held;
    if ('round' in found) {
      await queue.add('message', storing.stored, { ...storing.options, jobId: id, priority: found.round });
      return null;
    }
    await storing.clock.sleep(CLAIM_WAIT_MS);
  }
  throw new Error('the caller stopped waiting');
}
