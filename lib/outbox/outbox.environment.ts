import { readFileSync } from 'node:fs';
import { quotable } from '../options/config.report.js';
import { PLATFORM_OUTBOX_OPTIONS } from '../options/options.table.outbox.js';
import type { OptionRow } from '../options/options.table.types.js';
import { readTableEnv } from '../options/platform-auth.config.js';
import { ownAt } from '../options/own-options.util.js';
import { PlatformOutboxError } from './outbox.errors.js';
import type { OutboxConnection, PlatformOutboxOptions } from './outbox.types.js';

type Env = Readonly<Record<string, string | undefined>>;

/** What the environment's connection variables say, as the table reads them. */
interface EnvConnection {
  url?: string;
  username?: string;
  password?: string;
  tls?: { caPath?: string; certPath?: string; keyPath?: string };
}

/**
 * `options` with what the `PLATFORM_OUTBOX_*` variables set (`lib/options/options.table.outbox.ts`) where `options`
 * leave a setting unset: a setting in code wins, and a `connection` in code leaves every `PLATFORM_OUTBOX_REDIS_*`
 * variable unread. A connection from the environment with a user, a password or a TLS file is built as the options
 * BullMQ takes (`{ host, port, username, password, db, tls }`); a URL alone stays `{ url }`.
 * @throws PlatformOutboxError (`config`) naming every variable whose value is not of its type or out of its bounds;
 *   the value is quoted only when it is no secret.
 */
export function withOutboxEnvironment(options: PlatformOutboxOptions, env: Env): PlatformOutboxOptions {
  const read = readTableEnv(PLATFORM_OUTBOX_OPTIONS, env);
  const unread = (name: string) => options.connection !== undefined && name.startsWith('connection.');
  const problems = Object.entries(PLATFORM_OUTBOX_OPTIONS).flatMap(([name, row]) =>
    unread(name) ? [] : checkValue(name, row, ownAt(read, name)),
  );
  const connection =
    options.connection ?? environmentConnection(read.connection as EnvConnection | undefined, problems);
  if (problems.length > 0) throw new PlatformOutboxError('config', `PlatformOutboxModule: ${problems.join('; ')}`);
  const worker = mergeGroup(options.worker, read.worker as PlatformOutboxOptions['worker']);
  const retry = mergeGroup(options.retry, read.retry as PlatformOutboxOptions['retry']);
  return {
    ...options,
    ...(connection !== undefined && { connection }),
    ...(worker !== undefined && { worker }),
    ...(retry !== undefined && { retry: retry as PlatformOutboxOptions['retry'] }),
  };
}

/** The problem with one variable's parsed value, if any: a number in bounds, `true` or `false`, a Redis URL. */
function checkValue(name: string, row: OptionRow, value: unknown): string[] {
  if (value === undefined) return [];
  const setting = `${name} (${row.env})`;
  const shown = row.secret || typeof value !== 'string' ? undefined : quotable(value);
  const got = shown === undefined ? '' : `, got '${shown}'`;
  if (row.toggle && typeof value !== 'boolean' && typeof value !== 'object')
    return [`${setting} must be true or false${got}`];
  if (row.kind === 'number') {
    const { min = 0, max = Number.MAX_SAFE_INTEGER } = row;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
      return [`${setting} must be a whole number from ${min} to ${max}${got}`];
  }
  if (row.kind === 'url' && (typeof value !== 'string' || !isRedisUrl(value)))
    return [`${setting} must be a redis:// or rediss:// URL with a host; the value is not shown`];
  return [];
}

function isRedisUrl(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const url = new URL(text);
  return /^rediss?:$/.test(url.protocol) && url.hostname !== '';
}

/** The connection the variables describe; `undefined` when they set none (the outbox then says what it needs). */
function environmentConnection(read: EnvConnection | undefined, problems: string[]): OutboxConnection | undefined {
  if (read === undefined) return undefined;
  const { url, username, password, tls } = read;
  if (url === undefined) {
    problems.push(
      'PLATFORM_OUTBOX_REDIS_USERNAME, _PASSWORD and _TLS_* need PLATFORM_OUTBOX_REDIS_URL, the Redis they are for',
    );
    return undefined;
  }
  if (problems.length > 0 || !isRedisUrl(url)) return undefined;
  if (username === undefined && password === undefined && tls === undefined) return { url };
  if (username !== undefined && password === undefined)
    problems.push(
      'connection.username (PLATFORM_OUTBOX_REDIS_USERNAME) needs a password (PLATFORM_OUTBOX_REDIS_PASSWORD)',
    );
  const parsed = new URL(url);
  const files = tls === undefined ? undefined : tlsFiles(tls, problems);
  const db = parsed.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d+$/.test(db))
    problems.push(
      "connection.url (PLATFORM_OUTBOX_REDIS_URL) must name its database as a number ('/0'); the value is not shown",
    );
  return {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port === '' ? 6379 : Number(parsed.port),
    ...((username ?? parsed.username) !== '' && { username: username ?? decodeURIComponent(parsed.username) }),
    ...((password ?? parsed.password) !== '' && { password: password ?? decodeURIComponent(parsed.password) }),
    ...(db !== '' && { db: Number(db) }),
    ...((files !== undefined || parsed.protocol === 'rediss:') && { tls: files ?? true }),
  };
}

const TLS_FILES = [
  ['caPath', 'ca', 'PLATFORM_OUTBOX_REDIS_TLS_CA_PATH'],
  ['certPath', 'cert', 'PLATFORM_OUTBOX_REDIS_TLS_CERT_PATH'],
  ['keyPath', 'key', 'PLATFORM_OUTBOX_REDIS_TLS_KEY_PATH'],
] as const;

/** The TLS files' text, read once at start-up; a file that cannot be read is a problem naming its variable. */
function tlsFiles(paths: NonNullable<EnvConnection['tls']>, problems: string[]): Record<string, string> {
  if ((paths.certPath === undefined) !== (paths.keyPath === undefined))
    problems.push('PLATFORM_OUTBOX_REDIS_TLS_CERT_PATH and PLATFORM_OUTBOX_REDIS_TLS_KEY_PATH go together');
  const files: Record<string, string> = {};
  for (const [setting, option, variable] of TLS_FILES) {
    const path = paths[setting];
    if (path === undefined) continue;
    try {
      files[option] = readFileSync(path, 'utf8');
    } catch (error) {
      problems.push(
        `connection.tls.${setting} (${variable}) cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  }
  return files;
}

/**
 * A group of settings (`worker`, `retry`) from code and from the environment: each setting given in code wins;
 * `false` in code (no workers) wins over everything, and the environment's `false` over a group code left unset.
 */
function mergeGroup<T extends object>(
  code: T | boolean | undefined,
  fromEnv: T | boolean | undefined,
): T | boolean | undefined {
  if (code === undefined) return fromEnv;
  if (code === false || typeof fromEnv !== 'object') return code;
  if (code === true) return fromEnv;
  const given = Object.fromEntries(Object.entries(code).filter(([, value]) => value !== undefined));
  return { ...fromEnv, ...given };
}
