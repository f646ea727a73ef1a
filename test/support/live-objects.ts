import { EventEmitter } from 'node:events';
import { Agent, ClientRequest, IncomingMessage } from 'node:http';
import { Socket } from 'node:net';

/** A live transport object found in a value, and the property path that led to it. */
export interface LiveObject {
  readonly kind: string;
  readonly path: string;
}

const MAX_DEPTH = 12;

/** The kind of live transport object `value` is, or undefined: node's own classes, and undici's by their shape. */
function liveKind(value: object): string | undefined {
  if (value instanceof Socket) return 'net.Socket';
  if (value instanceof Agent) return 'http.Agent';
  if (value instanceof ClientRequest) return 'http.ClientRequest';
  if (value instanceof IncomingMessage) return 'http.IncomingMessage';
  // undici's Dispatcher (Agent, Client, Pool), the npm package's or the one inside node's fetch: an emitter that
  // dispatches. Their classes are not shared between the two copies, their shape is.
  const shape = value as { dispatch?: unknown; close?: unknown; destroy?: unknown };
  if (
    value instanceof EventEmitter &&
    typeof shape.dispatch === 'function' &&
    typeof shape.close === 'function' &&
    typeof shape.destroy === 'function'
  )
    return 'undici.Dispatcher';
  return undefined;
}

function keyText(key: string | symbol): string {
  return typeof key === 'symbol' ? `[${String(key)}]` : `.${key}`;
}

/** One value reached by a walk, and the property path that led to it. */
type Visit = (value: unknown, path: string) => void;

/**
 * Every value reachable from `root` by a property path: own and inherited keys, enumerable or not, strings and
 * symbols, getters invoked on the object they belong to, Map and Set entries, to `maxDepth` levels; each object is
 * walked once, from the shallowest path that reaches it. What a user, a logger or a debugger can read by walking an
 * error, whatever it renders as.
 */
function walk(root: unknown, maxDepth: number, visit: Visit): void {
  const walked = new Set<object>();
  const queue: { value: unknown; path: string; depth: number }[] = [{ value: root, path: '<root>', depth: 0 }];
  // Breadth first, so each object is first reached by its shallowest path and walked with the most levels left.
  for (let index = 0; index < queue.length; index++) {
    const { value, path, depth } = queue[index];
    visit(value, path);
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) continue;
    // A buffer's keys are its bytes: nothing to walk, and a socket's could be many.
    if (walked.has(value) || depth >= maxDepth || ArrayBuffer.isView(value)) continue;
    walked.add(value);
    const next = (child: unknown, step: string): void => {
      if (child !== undefined) queue.push({ value: child, path: `${path}${step}`, depth: depth + 1 });
    };
    if (value instanceof Map)
      for (const [key, entry] of value) {
        next(key, '<map key>');
        next(entry, `<map ${String(key)}>`);
      }
    if (value instanceof Set) for (const entry of value) next(entry, '<set entry>');
    const keys = new Set<string | symbol>();
    for (let owner: object | null = value; owner !== null; owner = Reflect.getPrototypeOf(owner)) {
      if (owner !== value) next(owner, '<prototype>');
      for (const key of Reflect.ownKeys(owner)) {
        if (keys.has(key)) continue;
        keys.add(key);
        const descriptor = Reflect.getOwnPropertyDescriptor(owner, key)!;
        if ('value' in descriptor) next(descriptor.value, keyText(key));
        else if (descriptor.get) next(invoke(descriptor.get, value), keyText(key));
      }
    }
  }
}

/**
 * Every live transport object (agent, socket, client request, incoming message, undici dispatcher) reachable from
 * `root` by any property path (`walk`).
 */
export function findLiveObjects(root: unknown, maxDepth = MAX_DEPTH): LiveObject[] {
  const found: LiveObject[] = [];
  const reported = new Set<object>();
  walk(root, maxDepth, (value, path) => {
    if (value === null || typeof value !== 'object' || reported.has(value)) return;
    // A class's prototype (`Agent.prototype`, reached from an agent) is an instance of nothing that lives.
    const kind = isPrototype(value) ? undefined : liveKind(value);
    if (!kind) return;
    reported.add(value);
    found.push({ kind, path });
  });
  return found;
}

/** The paths of every string reachable from `root` (`walk`) that contains `secret`. */
export function findSecret(root: unknown, secret: string, maxDepth = MAX_DEPTH): string[] {
  const found: string[] = [];
  walk(root, maxDepth, (value, path) => {
    if (typeof value === 'string' && value.includes(secret)) found.push(path);
  });
  return found;
}

function isPrototype(value: object): boolean {
  const constructor: unknown = Object.hasOwn(value, 'constructor') ? Reflect.get(value, 'constructor') : undefined;
  return typeof constructor === 'function' && constructor.prototype === value;
}

/** A getter read on `receiver`; one that throws (a getter of another class's instances) reads nothing. */
function invoke(getter: () => unknown, receiver: object): unknown {
  try {
    return getter.call(receiver);
  } catch {
    return undefined;
  }
}
