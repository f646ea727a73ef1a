import { inspect } from 'node:util';

/**
 * `inspect(root, { depth, showHidden: true })`, with each object's members shown once: where another path reaches an
 * object already shown with at least as many levels below it, the object reads `[shown]`. `inspect` renders an object
 * again for every path that reaches it, which in a Nest container (modules, providers, instance wrappers and their
 * parts referring to each other) made 12 MB of text and took a test half a minute of CPU; every string it showed
 * appears here too, rendered by `inspect` itself (hidden properties, WeakMap entries, custom inspects and all).
 */
export function renderReachable(root: unknown, depth: number): string {
  const shownWith = new WeakMap<object, number>();
  // inspect asks an object for its custom rendering before it renders it: this one, inherited by every object
  // without its own, answers `this` (render it as usual) the first time, or when more levels are left than then.
  function once(this: object, levelsLeft: number): object | string {
    const before = shownWith.get(this);
    if (before !== undefined && before >= levelsLeft) return '[shown]';
    shownWith.set(this, levelsLeft);
    return this;
  }
  Object.defineProperty(Object.prototype, inspect.custom, { value: once, configurable: true, writable: true });
  try {
    return inspect(root, { depth, showHidden: true });
  } finally {
    delete (Object.prototype as { [inspect.custom]?: unknown })[inspect.custom];
  }
}
