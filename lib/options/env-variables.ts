import type { ConfigProblem } from '../platform-auth.errors.js';
import { integrationEnvName } from './integration-name.util.js';
import { PLATFORM_AUTH_OPTIONS } from './options.table.js';
import { PLATFORM_USER_AUTH_OPTIONS } from './options.table.user.js';
import type { OptionTable } from './options.table.types.js';

type Env = Readonly<Record<string, string | undefined>>;

const PREFIX = 'PLATFORM_';

function tableVariables(table: OptionTable): string[] {
  return Object.values(table).flatMap((row) => (row.env === undefined ? [] : [row.env]));
}

/** Every variable the package reads for the default integration: machine authentication's and user sign-in's. */
const KNOWN: ReadonlySet<string> = new Set([
  ...tableVariables(PLATFORM_AUTH_OPTIONS),
  ...tableVariables(PLATFORM_USER_AUTH_OPTIONS),
]);

/** The known names without `PLATFORM_`: a named integration's variable is `PLATFORM_<NAME>_` and one of these. */
const SUFFIXES = [...KNOWN].map((name) => name.slice(PREFIX.length));

/**
 * Known: one of the package's variables, or one with an integration's name inserted after `PLATFORM_`. Any name is
 * accepted there, not only the integrations the application configured: a variable meant for an integration that
 * another process of the same environment configures is no typo.
 */
function isKnown(name: string): boolean {
  if (KNOWN.has(name)) return true;
  const rest = name.slice(PREFIX.length);
  return SUFFIXES.some((suffix) => rest.length > suffix.length + 1 && rest.endsWith(`_${suffix}`));
}

/**
 * Damerau-Levenshtein distance (optimal string alignment) between two names, compared without `PLATFORM_` and
 * without `_`: a missing or extra underscore is the commonest slip and costs nothing.
 */
function distance(a: string, b: string): number {
  const s = a.replace(/^PLATFORM_/, '').replace(/_/g, '');
  const t = b.replace(/^PLATFORM_/, '').replace(/_/g, '');
  const d = Array.from({ length: s.length + 1 }, (_, i) =>
    Array.from({ length: t.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[s.length][t.length];
}

/** Close enough to be a slip: two edits, one for short names, where two would reach unrelated ones. */
function isNear(a: string, b: string): boolean {
  const length = Math.min(a.length, b.length) - PREFIX.length;
  return distance(a, b) <= (length >= 8 ? 2 : 1);
}

/**
 * The known variable `name` most likely meant: among the package's variables, and, for a name that starts like a
 * named integration's (`PLATFORM_BILLING_MACHNE_ID`), among that integration's.
 */
function closestKnown(name: string): string | undefined {
  const words = name.slice(PREFIX.length).split('_');
  const candidates = [...KNOWN];
  for (let i = 1; i < words.length; i++) {
    const integration = `${PREFIX}${words.slice(0, i).join('_')}_`;
    candidates.push(...SUFFIXES.map((suffix) => integration + suffix));
  }
  let best: { name: string; distance: number } | undefined;
  for (const candidate of candidates) {
    if (!isNear(name, candidate)) continue;
    const d = distance(name, candidate);
    if (best === undefined || d < best.distance) best = { name: candidate, distance: d };
  }
  return best?.name;
}

/** The set `PLATFORM_*` variables of `env` that no part of the package reads. */
function unknownVariables(env: Env): string[] {
  return Object.keys(env)
    .filter((name) => name.startsWith(PREFIX) && env[name] !== undefined && !isKnown(name))
    .sort();
}

/**
 * One warning per `PLATFORM_*` variable of `env` that no part of the package reads, naming the closest known one.
 * Only names are shown, never a value.
 */
export function unknownVariableWarnings(env: Env): ConfigProblem[] {
  return unknownVariables(env).map((name) => {
    const meant = closestKnown(name);
    return {
      option: name,
      setting: name,
      message: `is not a variable this package reads${meant === undefined ? '' : `; did you mean ${meant}?`}`,
    };
  });
}

/**
 * `problems` with a near-miss named: a required setting whose variable is unset, while an unknown variable close to it
 * is set ("PLATFORM_MACHINEID is set — did you mean PLATFORM_MACHINE_ID?").
 */
export function withNearMisses(problems: readonly ConfigProblem[], env: Env): ConfigProblem[] {
  const unknown = unknownVariables(env);
  return problems.map((problem) => {
    const variable = /\((PLATFORM_[A-Z0-9_]+)\)/.exec(problem.setting)?.[1];
    if (variable === undefined || (env[variable] ?? '').trim() !== '' || !/\brequired\b/.test(problem.message))
      return problem;
    const present = unknown.find((name) => isNear(name, variable));
    if (present === undefined) return problem;
    return { ...problem, message: `${problem.message}; ${present} is set — did you mean ${variable}?` };
  });
}

/**
 * A warning per set variable that a group's variable set to `false` leaves unread, for `integration`'s variables:
 * `PLATFORM_CALL_RETRY=false` turns re-sends off, so `PLATFORM_CALL_RETRY_MAX_ATTEMPTS` beside it says nothing.
 */
export function switchedOffWarnings(env: Env, integration?: string): ConfigProblem[] {
  const rows = Object.entries(PLATFORM_AUTH_OPTIONS as OptionTable);
  return rows.flatMap(([group, row]) => {
    if (!row.toggle || row.env === undefined) return [];
    const off = integrationEnvName(row.env, integration);
    if (!/^(false|0|no)$/i.test(env[off]?.trim() ?? '')) return [];
    return rows.flatMap(([name, member]) => {
      const variable = member.env === undefined ? undefined : integrationEnvName(member.env, integration);
      if (!name.startsWith(`${group}.`) || variable === undefined || (env[variable] ?? '').trim() === '') return [];
      return [{ option: name, setting: `${name} (${variable})`, message: `is not read: ${off} is false` }];
    });
  });
}
