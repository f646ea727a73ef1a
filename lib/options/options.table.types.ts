/**
 * How a setting's value is written and checked:
 * - `number`, `boolean`, `list`, `enum`: checked from this table (`min`/`max`, `values`); environment text is parsed
 *   to that type;
 * - `text`, `url`, `pem`, `path`, `object`: checked by the resolver or the credentials loader, which know more;
 * - `instance`: an object only code can pass (a store, a clock, a logger), never from the environment.
 */
export type OptionKind =
  'text' | 'url' | 'pem' | 'path' | 'number' | 'boolean' | 'list' | 'enum' | 'object' | 'instance';

export interface OptionRow {
  /** The environment variable that fills it, for the default integration (`PLATFORM_<NAME>_…` for a named one). */
  readonly env?: string;
  readonly kind: OptionKind;
  /** The value used when it is not set; `undefined` when there is none or it is derived (see `rule`). */
  readonly default?: unknown;
  /** Smallest and largest value of a `number`. */
  readonly min?: number;
  readonly max?: number;
  /** Allowed values of an `enum`. */
  readonly values?: readonly string[];
  /**
   * Secret: never printed, and not kept as text once start-up has used it (dropped from the module's options,
   * read from the environment only when used by `platformAuthConfig`).
   */
  readonly secret?: true;
  /**
   * An `object` group that also takes `true` (on, with its defaults) or `false` (off), in code and in its variable;
   * its variable set to `false` leaves the group's other variables unread.
   */
  readonly toggle?: true;
  /** What a user needs to know, in one line: the configuration page's table shows it. */
  readonly rule: string;
}

/** An option table: every option of one module, dotted below its group (`key.privateKeyPath`), in the page's order. */
export type OptionTable = Readonly<Record<string, OptionRow>>;
