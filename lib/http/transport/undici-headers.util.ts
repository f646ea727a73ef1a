/*
 * undici's header shapes, read and extended without touching the caller's object: a record, a flat
 * `[name, value, …]` list, or an iterable of `[name, value]` pairs. Names are compared in lower case.
 */

export type DispatchHeaders =
  Record<string, string | string[] | undefined> | readonly unknown[] | Iterable<unknown> | null;

/** Whether `headers` names `name` (lower case), whatever its value. */
export function hasHeader(headers: DispatchHeaders | undefined, name: string): boolean {
  if (!headers) return false;
  if (isRecord(headers)) {
    for (const key in headers) if (key.toLowerCase() === name) return true;
    return false;
  }
  for (const [key] of headerPairs(headers)) if (key.toLowerCase() === name) return true;
  return false;
}

/** The value of `name` (lower case) in `headers`, `undefined` when absent. */
export function headerValue(headers: DispatchHeaders | undefined, name: string): unknown {
  if (!headers) return undefined;
  if (isRecord(headers)) {
    for (const key in headers) if (key.toLowerCase() === name) return headers[key];
    return undefined;
  }
  for (const [key, value] of headerPairs(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

/** A copy with `name` (lower case) set to `value`, in the shape undici takes every other: a flat list, or a record. */
export function withHeader(headers: DispatchHeaders | undefined, name: string, value: string): DispatchHeaders {
  if (!headers) return { [name]: value };
  if (isRecord(headers)) return { ...headers, [name]: value };
  const flat: unknown[] = [];
  for (const [key, header] of headerPairs(headers)) flat.push(key, header);
  flat.push(name, value);
  return flat;
}

/** A copy without `name` (lower case). */
export function withoutHeader(headers: DispatchHeaders | undefined, name: string): DispatchHeaders {
  const flat: unknown[] = [];
  if (headers) for (const [key, header] of headerPairs(headers)) if (key.toLowerCase() !== name) flat.push(key, header);
  return flat;
}

function isRecord(headers: NonNullable<DispatchHeaders>): headers is Record<string, string | string[] | undefined> {
  return !Array.isArray(headers) && typeof (headers as Iterable<unknown>)[Symbol.iterator] !== 'function';
}

function* headerPairs(headers: NonNullable<DispatchHeaders>): Generator<[string, unknown]> {
  if (isRecord(headers)) {
    for (const name in headers) yield [name, headers[name]];
  } else if (Array.isArray(headers) && !Array.isArray(headers[0])) {
    for (let i = 0; i + 1 < headers.length; i += 2) yield [String(headers[i]), headers[i + 1]];
  } else {
    for (const pair of headers as Iterable<[unknown, unknown]>) yield [String(pair[0]), pair[1]];
  }
}
