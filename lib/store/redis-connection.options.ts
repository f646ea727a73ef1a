import { readFileSync } from 'node:fs';
import { isLoopbackHost } from '../util/loopback.util.js';
import { secretText, type Secret } from '../util/secret.util.js';
import { quotable, type ConfigReport } from '../options/config.report.js';
import type { FlatPlatformAuthOptions } from '../options/flat-options.interface.js';

/** How the module reaches Redis: one server, a cluster through its seed nodes, or the master the sentinels name. */
export type RedisMode = 'standalone' | 'cluster' | 'sentinel';

export interface RedisEndpoint {
  readonly host: string;
  readonly port: number;
}

export interface RedisTlsFiles {
  readonly caPath?: string;
  readonly certPath?: string;
  readonly keyPath?: string;
}

/**
 * A Redis the module connects to itself, validated at start-up. No URL is kept (a URL may hold a password): the
 * endpoints, and the password as a `Secret` that no dump renders.
 */
export interface RedisConnectionSettings {
  readonly mode: RedisMode;
  /** The server (standalone), the seed nodes (cluster) or the sentinels (sentinel). */
  readonly nodes: readonly RedisEndpoint[];
  readonly sentinelMaster?: string;
  /** The database of a standalone URL's path. */
  readonly database?: number;
  readonly username?: string;
  readonly password?: Secret;
  /** Present when the connection is TLS (`rediss://`, or any TLS file with Sentinel); files are read per connection. */
  readonly tls?: RedisTlsFiles;
}

const MODE_OPTIONS = ['tokenStoreUrl', 'tokenStoreClusterNodes', 'tokenStoreSentinelNodes'] as const;
const TLS_OPTIONS = ['tokenStoreTlsCaPath', 'tokenStoreTlsCertPath', 'tokenStoreTlsKeyPath'] as const;
/** Settings that shape a connection the module makes, and so mean nothing with a `tokenStore` passed in. */
export const CONNECTION_OPTIONS = [
  ...MODE_OPTIONS,
  'tokenStoreSentinelMaster',
  'tokenStoreUsername',
  'tokenStorePassword',
  ...TLS_OPTIONS,
] as const;

/** Whether `options` configure a Redis the module connects to (any mode, or only half of one). */
export function configuresConnection(options: FlatPlatformAuthOptions): boolean {
  return MODE_OPTIONS.some((name) => options[name] !== undefined) || options.tokenStoreSentinelMaster !== undefined;
}

/**
 * Validates the connection settings into `report`: exactly one mode, no half-given pair (sentinels and master, a
 * client certificate and its key, a user and a password), TLS files that are readable PEM, and URLs of the right
 * kind. `undefined` when there is a problem. Never quotes a URL (it may hold a password) or a file's content.
 */
export function resolveRedisConnection(
  options: FlatPlatformAuthOptions,
  report: ConfigReport,
): RedisConnectionSettings | undefined {
  const before = report.problems.length;
  const modes = MODE_OPTIONS.filter((name) => options[name] !== undefined);
  if (modes.length > 1) {
    report.problem(modes[1], `is set together with ${report.name(modes[0])}; configure exactly one Redis mode`);
  }
  const tls = resolveTlsFiles(options, report);
  let target: Omit<RedisConnectionSettings, 'username' | 'password'> | undefined;
  let fromUrl: { username?: string; password?: string } = {};
  if (options.tokenStoreUrl !== undefined) {
    const parsed = standaloneTarget(options.tokenStoreUrl, tls, report);
    if (parsed) ({ credentials: fromUrl, ...target } = parsed);
  } else if (options.tokenStoreClusterNodes !== undefined) {
    target = clusterTarget(options.tokenStoreClusterNodes, tls, report);
  } else if (options.tokenStoreSentinelNodes !== undefined || options.tokenStoreSentinelMaster !== undefined) {
    target = sentinelTarget(options, tls, report);
  }
  if (options.tokenStoreSentinelMaster !== undefined && options.tokenStoreSentinelNodes === undefined && modes.length)
    report.problem('tokenStoreSentinelMaster', `is set without ${report.name('tokenStoreSentinelNodes')}`);

  const username = options.tokenStoreUsername ?? fromUrl.username;
  const password = options.tokenStorePassword ?? fromUrl.password;
  if (options.tokenStoreUsername !== undefined && !oneLine(options.tokenStoreUsername))
    report.problem('tokenStoreUsername', 'must be one line of text');
  if (options.tokenStorePassword !== undefined && !oneLine(options.tokenStorePassword))
    report.problem('tokenStorePassword', 'must be one line of text; the value is not shown');
  if (username !== undefined && password === undefined) {
    report.problem('tokenStoreUsername', `is set without a password (${report.name('tokenStorePassword')})`);
  }
  if (report.problems.length > before || !target) return undefined;
  if (password !== undefined && !target.tls && target.nodes.some((node) => !isLoopbackHost(node.host))) {
    report.warn(
      modes[0] ?? 'tokenStoreSentinelNodes',
      'sends a Redis password to a host off loopback without TLS: it crosses the network in clear text; use rediss:// (or a TLS file with Sentinel)',
    );
  }
  return {
    ...target,
    username: username === '' ? undefined : username,
    password: password === undefined ? undefined : secretText(password),
  };
}

function standaloneTarget(
  value: unknown,
  tls: RedisTlsFiles | undefined,
  report: ConfigReport,
):
  | (Omit<RedisConnectionSettings, 'username' | 'password'> & { credentials: { username?: string; password?: string } })
  | undefined {
  const url = redisUrl(value);
  if (!url) {
    report.problem('tokenStoreUrl', 'must be a redis:// or rediss:// URL with a host; the value is not shown');
    return undefined;
  }
  const database = url.pathname.replace(/^\//, '');
  if (database !== '' && !/^\d{1,5}$/.test(database)) {
    report.problem('tokenStoreUrl', "has a path that is not a database number ('/0', '/1', …); the value is not shown");
    return undefined;
  }
  const secure = url.protocol === 'rediss:';
  if (tls && !secure) report.problem('tokenStoreUrl', 'is redis:// but TLS files are set; use rediss://');
  return {
    mode: 'standalone',
    nodes: [endpointOf(url)],
    database: database === '' ? undefined : Number(database),
    tls: secure ? (tls ?? {}) : undefined,
    credentials: {
      username: url.username === '' ? undefined : decodeURIComponent(url.username),
      password: url.password === '' ? undefined : decodeURIComponent(url.password),
    },
  };
}

function clusterTarget(
  value: unknown,
  tls: RedisTlsFiles | undefined,
  report: ConfigReport,
): Omit<RedisConnectionSettings, 'username' | 'password'> | undefined {
  const entries = Array.isArray(value) ? (value as unknown[]) : [];
  if (entries.length === 0) {
    report.problem('tokenStoreClusterNodes', 'must list at least one redis:// or rediss:// seed-node URL');
    return undefined;
  }
  const urls = entries.map(redisUrl);
  const bad = urls.findIndex((url) => !url || (url.pathname !== '' && url.pathname !== '/'));
  if (bad !== -1) {
    report.problem('tokenStoreClusterNodes', `entry ${bad + 1} is not a redis:// or rediss:// URL of a node`);
    return undefined;
  }
  const nodes = urls as URL[];
  if (nodes.some((url) => url.username !== '' || url.password !== '')) {
    report.problem(
      'tokenStoreClusterNodes',
      `holds credentials in a URL; set ${report.name('tokenStoreUsername')} and ${report.name('tokenStorePassword')} instead (the value is not shown)`,
    );
    return undefined;
  }
  const secure = nodes.filter((url) => url.protocol === 'rediss:').length;
  if (secure !== 0 && secure !== nodes.length) {
    report.problem('tokenStoreClusterNodes', 'mixes redis:// and rediss:// URLs; use one scheme for every node');
    return undefined;
  }
  if (tls && secure === 0)
    report.problem('tokenStoreClusterNodes', 'are redis:// but TLS files are set; use rediss://');
  return { mode: 'cluster', nodes: nodes.map(endpointOf), tls: secure ? (tls ?? {}) : undefined };
}

function sentinelTarget(
  options: FlatPlatformAuthOptions,
  tls: RedisTlsFiles | undefined,
  report: ConfigReport,
): Omit<RedisConnectionSettings, 'username' | 'password'> | undefined {
  const { tokenStoreSentinelNodes: list, tokenStoreSentinelMaster: master } = options;
  const before = report.problems.length;
  if (list === undefined) {
    report.problem('tokenStoreSentinelMaster', `is set without ${report.name('tokenStoreSentinelNodes')}`);
    return undefined;
  }
  if (master === undefined || typeof master !== 'string' || !/^[\w.:-]{1,200}$/.test(master)) {
    report.problem(
      'tokenStoreSentinelMaster',
      master === undefined
        ? `is required with ${report.name('tokenStoreSentinelNodes')}: the name of the master the sentinels monitor`
        : "must be the master's name: letters, digits, '.', '_', '-' or ':'",
    );
  }
  const entries = Array.isArray(list) ? (list as unknown[]) : [];
  if (entries.length === 0) report.problem('tokenStoreSentinelNodes', 'must list at least one sentinel as host:port');
  const nodes = entries.map((entry) => (typeof entry === 'string' ? hostPort(entry) : undefined));
  const bad = nodes.findIndex((node) => !node);
  if (bad !== -1) {
    const shown = quotable(String(entries[bad]));
    const quoted = shown === undefined || /[@/]/.test(shown) ? '' : ` ('${shown}')`;
    report.problem('tokenStoreSentinelNodes', `entry ${bad + 1}${quoted} is not host:port`);
  }
  if (report.problems.length > before || master === undefined) return undefined;
  return { mode: 'sentinel', nodes: nodes as RedisEndpoint[], sentinelMaster: master, tls };
}

function resolveTlsFiles(options: FlatPlatformAuthOptions, report: ConfigReport): RedisTlsFiles | undefined {
  const { tokenStoreTlsCaPath: caPath, tokenStoreTlsCertPath: certPath, tokenStoreTlsKeyPath: keyPath } = options;
  if (caPath === undefined && certPath === undefined && keyPath === undefined) return undefined;
  if ((certPath === undefined) !== (keyPath === undefined)) {
    const [given, missing] =
      certPath === undefined
        ? (['tokenStoreTlsKeyPath', 'tokenStoreTlsCertPath'] as const)
        : (['tokenStoreTlsCertPath', 'tokenStoreTlsKeyPath'] as const);
    report.problem(given, `is set without ${report.name(missing)}: mutual TLS needs the certificate and its key`);
  }
  checkPemFile(caPath, 'tokenStoreTlsCaPath', /-----BEGIN CERTIFICATE-----/, 'certificate', report);
  checkPemFile(certPath, 'tokenStoreTlsCertPath', /-----BEGIN CERTIFICATE-----/, 'certificate', report);
  checkPemFile(keyPath, 'tokenStoreTlsKeyPath', /-----BEGIN (RSA |EC )?PRIVATE KEY-----/, 'private key', report);
  return { caPath, certPath, keyPath };
}

/** A readable PEM file holding `what`; the file's content is never quoted, its path only when it looks like one. */
function checkPemFile(path: unknown, option: string, block: RegExp, what: string, report: ConfigReport): void {
  if (path === undefined) return;
  const shown = typeof path === 'string' ? quotable(path) : undefined;
  const named = shown !== undefined && /^(\/|\.\.?\/|~\/)/.test(shown) ? ` '${shown}'` : ' (the value is not shown)';
  let text: string;
  try {
    text = readFileSync(path as string, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    report.problem(option, `cannot read the file${named}${code ? ` (${code})` : ''}`);
    return;
  }
  if (!block.test(text)) report.problem(option, `the file${named} holds no PEM ${what}`);
}

function redisUrl(value: unknown): URL | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    const url = new URL(value.trim());
    return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '' ? url : undefined;
  } catch {
    return undefined;
  }
}

function endpointOf(url: URL): RedisEndpoint {
  return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: url.port === '' ? 6379 : Number(url.port) };
}

/** `host:port` or `[v6]:port` of a sentinel. */
function hostPort(entry: string): RedisEndpoint | undefined {
  const match = /^(?:\[([0-9a-f:.]+)\]|([\w.-]+)):(\d{1,5})$/i.exec(entry.trim());
  const port = Number(match?.[3]);
  if (!match || port < 1 || port > 65_535) return undefined;
  return { host: match[1] ?? match[2], port };
}

function oneLine(value: unknown): boolean {
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  return typeof value === 'string' && !/[\u0000-\u001f\u007f]/.test(value);
}
