import type { TokenStore, TokenStoreEntry } from './token-store.interface.js';
import type { RedisChannel } from './redis.channel.js';
import { UnexpectedReplyError } from './redis-bounded.reader.js';

export const DEFAULT_CONNECT_TIMEOUT_MS = 1_000;

/** Entries are `<version>:<tag>:<payload>`; a lock is an entry with an empty payload, so one script releases both. */
const ENTRY = /^(\d+):([^:]*):(.*)$/s;

const SET_IF_NEWER = `
local current = redis.call('GET', KEYS[1])
if current then
  local version = tonumber(string.match(current, '^(%d+):'))
  if version and version >= tonumber(ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`;

const DELETE_IF_TAGGED = `
local current = redis.call('GET', KEYS[1])
if current and string.match(current, '^%d+:([^:]*):') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** What `get` answers for a stored value over the size bound: an entry no one can open, unsent. */
const OVERSIZE = '0::';

/**
 * Reads a value only when it is within the bound, so a huge value planted by someone who can write to Redis costs
 * a replica one short reply, not a transfer and a decryption.
 */
const GET_BOUNDED = `
local current = redis.call('GET', KEYS[1])
if current and #current > tonumber(ARGV[1]) then return '${OVERSIZE}' end
return current`;

/**
 * `TokenStore` on Redis (standalone, Sentinel or Cluster: every key an integration uses carries one hash tag, and
 * every command touches one key). The bounded read, the conditional write and compare-and-delete are Lua scripts,
 * so each is one atomic round trip; the ACL a store user needs is `+get +set +del +eval` on its keys.
 */
export class RedisEntryStore implements TokenStore {
  constructor(
    /** Lent to the module's own scripts (the shared rate limit) on the same connection. */
    readonly channel: RedisChannel,
    private readonly maxEntryBytes: number,
  ) {}

  connect(): Promise<void> {
    return this.channel.connect();
  }

  /**
   * The entry under `key`; a value that is not one of the store's entries, or is too large, as an empty payload. A
   * reply the script cannot have sent (not a string, or longer than the bound it applies) is a store failure: the
   * server is not Redis running the script, and the caller stops asking it for the back-off instead of reading more.
   */
  async get(key: string): Promise<TokenStoreEntry | undefined> {
    const args = ['EVAL', GET_BOUNDED, '1', key, String(this.maxEntryBytes)];
    const value = this.channel.read
      ? await this.channel.read(key, args, this.maxEntryBytes)
      : await this.channel.send(key, args);
    if (value === null || value === undefined) return undefined;
    if (typeof value !== 'string') throw new UnexpectedReplyError('UNEXPECTED_REPLY');
    // String length counts UTF-16 units, never more than the bytes the script measured.
    if (value.length > this.maxEntryBytes) throw new UnexpectedReplyError('REPLY_TOO_LARGE');
    const match = ENTRY.exec(value);
    if (!match) return { version: 0, tag: '', payload: '' };
    return { version: Number(match[1]), tag: match[2], payload: match[3] };
  }

  async setIfNewer(key: string, entry: TokenStoreEntry, ttlMs: number): Promise<boolean> {
    const reply = await this.channel.send(key, [
      'EVAL',
      SET_IF_NEWER,
      '1',
      key,
      String(entry.version),
      encode(entry),
      String(Math.max(1, Math.ceil(ttlMs))),
    ]);
    return expected(reply, [0, 1]) === 1;
  }

  async deleteIfTagged(key: string, tag: string): Promise<boolean> {
    return expected(await this.channel.send(key, ['EVAL', DELETE_IF_TAGGED, '1', key, tag]), [0, 1]) === 1;
  }

  async acquireLock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const value = encode({ version: 0, tag: owner, payload: '' });
    const reply = await this.channel.send(key, ['SET', key, value, 'NX', 'PX', String(Math.max(1, Math.ceil(ttlMs)))]);
    return expected(reply, ['OK', null, undefined]) === 'OK';
  }

  releaseLock(key: string, owner: string): Promise<boolean> {
    return this.deleteIfTagged(key, owner);
  }

  close(): Promise<void> {
    return this.channel.close();
  }
}

/** `reply` when it is one of the answers the command has; anything else is no Redis running the command: a store failure. */
function expected<T>(reply: unknown, answers: readonly T[]): T {
  if (!answers.includes(reply as T)) throw new UnexpectedReplyError('UNEXPECTED_REPLY');
  return reply as T;
}

function encode(entry: TokenStoreEntry): string {
  if (!Number.isSafeInteger(entry.version) || entry.version < 0) throw new TypeError('version must be a whole number');
  if (entry.tag.includes(':')) throw new TypeError('tag must not contain ":"');
  return `${entry.version}:${entry.tag}:${entry.payload}`;
}
