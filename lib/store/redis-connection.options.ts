import { readFileSync } from 'node:fs';
import { isLoopbackHost } from '../util/loopback.util.js';
import { secretText, type Secret } from '../util/secret.util.js';
import { quotable, type ConfigReport } from '../options/config.report.js';
import type { TokenStoreOptions } from '../options/token-store-options.interface.js';

/** How the module reaches Redis: one server, a cluster through its seed nodes, or the master the sentinels name. */
type RedisMode = 'standalone' | 'cluster' | 'sentinel';

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

const MODE_OPTIONS = ['tokenStore.url', 'tokenStore.clusterNodes', 'tokenStore.sentinel.nodes'] as const;
/** Settings that shape a connection the module makes, and so mean nothing with a store passed in. */
const CONNECTION_OPTIONS = [
  ...MODE_OPTIONS,
  'tokenStore.sentinel.masterName',
  'tokenStore.username',
  'tokenStore.password',
  'tokenStore.tls.caPath',
  'tokenStore.tls.certPath',
  'tokenStore.tls.keyPath',
] as const;

/** The connection settings of `store` that are set, by option (`tokenStore.url`). */
export function connectionSettings(store: TokenStoreOptions | undefined): (typeof CONNECTION_OPTIONS)[number][] {
  const given = {
    'tokenStore.url': store?.url,
    'tokenStore.clusterNodes': store?.clusterNodes,
    'tokenStore.sentinel.nodes': store?.sentinel?.nodes,
    'tokenStore.sentinel.masterName': store?.sentinel?.masterName,
    'tokenStore.username': store?.username,
    'tokenStore.password': store?.password,
    'tokenStore.tls.caPath': store?.tls?.caPath,
    'tokenStore.tls.certPath': store?.tls?.certPath,
    'tokenStore.tls.keyPath': store?.tls?.keyPath,
  } satisfies Record<(typeof CONNECTION_OPTIONS)[number], unknown>;
  return CONNECTION_OPTIONS.filter((name) => given[name] !== undefined);
}

/** Whether `store` configures a Redis the module connects to (any mode, or only half of one). */
export function configuresConnection(store: TokenStoreOptions | undefined): boolean {
  return connectionSettings(store).some(
    (name) => (MODE_OPTIONS as readonly string[]).includes(name) || name === 'tokenStore.sentinel.masterName',
  );
}

/**
 * Validates the connection settings into `report`: exactly one mode, no half-given pair (sentinels and master, a
 * client certificate and its key, a user and a password), TLS files that are readable PEM, and URLs of the right
 * kind. `undefined` when there is a problem. Never quotes a URL (it may hold a password) or a file's content.
 */
export function resolveRedisConnection(
  options: TokenStoreOptions,
  report: ConfigReport,
): RedisConnectionSettings | undefined {
  const before = report.problems.length;
  const given = connectionSettings(options);
  const modes = MODE_OPTIONS.filter((name) => given.includes(name));
  if (modes.length > 1) {
    report.problem(modes[1], `is set together with ${report.name(modes[0])}; configure exactly one Redis mode`);
  }
  const tls = resolveTlsFiles(options, report);
  let target: Omit<RedisConnectionSettings, 'username' | 'password'> | undefined;
  let fromUrl: { username?: string; password?: string } = {};
  const { sentinel } = options;
  if (options.url !== undefined) {
    const parsed = standaloneTarget(options.url, tls, report);
    if (parsed) ({ credentials: fromUrl, ...target } = parsed);
  } else if (options.clusterNodes !== undefined) {
    target = clusterTarget(options.clusterNodes, tls, report);
  } else if (sentinel?.nodes !== undefined || sentinel?.masterName !== undefined) {
    target = sentinelTarget(sentinel, tls, report);
  }
  if (sentinel?.masterName !== undefined && sentinel.nodes === undefined && modes.length)
    report.problem('tokenStore.sentinel.masterName', `is set without ${report.name('tokenStore.sentinel.nodes')}`);

  const username = options.username ?? fromUrl.username;
  const password = options.password ?? fromUrl.password;
  if (options.username !== undefined && !oneLine(options.username))
    report.problem('tokenStore.username', 'must be one line of text');
  if (options.password !== undefined && !oneLine(options.password))
    report.problem('tokenStore.password', 'must be one line of text; the value is not shown');
  if (username !== undefined && password === undefined) {
    report.problem('tokenStore.username', `is set without a password (${report.name('tokenStore.password')})`);
  }
  if (report.problems.length > before || !target) return undefined;
  if (password !== undefined && !target.tls && target.nodes.some((node) => !isLoopbackHost(node.host))) {
    report.warn(
      modes[0] ?? 'tokenStore.sentinel.nodes',
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
    report.problem('tokenStore.url', 'must be a redis:// or rediss:// URL with a host; the value is not shown');
    return undefined;
  }
  const database = url.pathname.replace(/^\//, '');
  if (database !== '' && !/^\d{1,5}$/.test(database)) {
    report.problem(
      'tokenStore.url',
      "has a path that is not a database number ('/0', '/1', …); the value is not shown",
    );
    return undefined;
  }
  const secure = url.protocol === 'rediss:';
  if (tls && !secure) report.problem('tokenStore.url', 'is redis:// but TLS files are set; use rediss://');
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
    report.problem('tokenStore.clusterNodes', 'must list at least one redis:// or rediss:// seed-node URL');
    return undefined;
  }
  const urls = entries.map(redisUrl);
  const bad = urls.findIndex((url) => !url || (url.pathname !== '' && url.pathname !== '/'));
  if (bad !== -1) {
    report.problem('tokenStore.clusterNodes', `entry ${bad + 1} is not a redis:// or rediss:// URL of a node`);
    return undefined;
  }
  const nodes = urls as URL[];
  if (nodes.some((url) => url.username !== '' || url.password !== '')) {
    report.problem(
      'tokenStore.clusterNodes',
      `holds credentials in a URL; set ${report.name('tokenStore.username')} and ${report.name('tokenStore.password')} instead (the value is not shown)`,
    );
    return undefined;
  }
  const secure = nodes.filter((url) => url.protocol === 'rediss:').length;
  if (secure !== 0 && secure !== nodes.length) {
    report.problem('tokenStore.clusterNodes', 'mixes redis:// and rediss:// URLs; use one scheme for every node');
    return undefined;
  }
  if (tls && secure === 0)
    report.problem('tokenStore.clusterNodes', 'are redis:// but TLS files are set; use rediss://');
  return { mode: 'cluster', nodes: nodes.map(endpointOf), tls: secure ? (tls ?? {}) : undefined };
}

function sentinelTarget(
  sentinel: Partial<TokenStoreOptions['sentinel']>,
  tls: RedisTlsFiles | undefined,
  report: ConfigReport,
): Omit<RedisConnectionSettings, 'username' | 'password'> | undefined {
  const { nodes: list, masterName: master } = sentinel ?? {};
  const before = report.problems.length;
  if (list === undefined) {
    report.problem('tokenStore.sentinel.masterName', `is set without ${report.name('tokenStore.sentinel.nodes')}`);
    return undefined;
  }
  if (master === undefined || typeof master !== 'string' || !/^[\w.:-]{1,200}$/.test(master)) {
    report.problem(
      'tokenStore.sentinel.masterName',
      master === undefined
        ? `is required with ${report.name('tokenStore.sentinel.nodes')}: the name of the master the sentinels monitor`
        : "must be the master's name: letters, digits, '.', '_', '-' or ':'",
    );
  }
  const entries = Array.isArray(list) ? (list as unknown[]) : [];
  if (entries.length === 0) report.problem('tokenStore.sentinel.nodes', 'must list at least one sentinel as host:port');
  const nodes = entries.map((entry) => (typeof entry === 'string' ? hostPort(entry) : undefined));
  const bad = nodes.findIndex((node) => !node);
  if (bad !== -1) {
    const shown = quotable(String(entries[bad]));
    const quoted = shown === undefined || /[@/]/.test(shown) ? '' : ` ('${shown}')`;
    report.problem('tokenStore.sentinel.nodes', `entry ${bad + 1}${quoted} is not host:port`);
  }
  if (report.problems.length > before || master === undefined) return undefined;
  return { mode: 'sentinel', nodes: nodes as RedisEndpoint[], sentinelMaster: master, tls };
}

function resolveTlsFiles(options: TokenStoreOptions, report: ConfigReport): RedisTlsFiles | undefined {
  const { caPath, certPath, keyPath } = options.tls ?? {};
  if (caPath === undefined && certPath === undefined && keyPath === undefined) return undefined;
  if ((certPath === undefined) !== (keyPath === undefined)) {
    const [given, missing] =
      certPath === undefined
        ? (['tokenStore.tls.keyPath', 'tokenStore.tls.certPath'] as const)
        : (['tokenStore.tls.certPath', 'tokenStore.tls.keyPath'] as const);
    report.problem(given, `is set without ${report.name(missing)}: mutual TLS needs the certificate and its key`);
  }
  checkPemFile(caPath, 'tokenStore.tls.caPath', /-----BEGIN CERTIFICATE-----/, 'certificate', report);
  checkPemFile(certPath, 'tokenStore.tls.certPath', /-----BEGIN CERTIFICATE-----/, 'certificate', report);
  checkPemFile(keyPath, 'tokenStore.tls.keyPath', /-----BEGIN (RSA |EC )?PRIVATE KEY-----/, 'private key', report);
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
