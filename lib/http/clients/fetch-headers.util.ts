/*
 * `HeadersInit` in its three shapes (a `Headers`, `[name, value]` pairs, a record), read and extended without
 * touching the caller's object: an `init` is often a constant reused for every call.
 */

import { recordWith } from './undici-headers.util.js';

const AUTHORIZATION = 'authorization';

/** The global `HeadersInit`, which `@types/node` does not name. */
type HeadersInit = NonNullable<RequestInit['headers']>;

export function hasAuthorization(headers: HeadersInit | undefined): boolean {
  return hasHeader(headers, AUTHORIZATION);
}

/** Whether `headers` has `name` (lower case). */
export function hasHeader(headers: HeadersInit | undefined, name: string): boolean {
  if (headers === undefined) return false;
  if (headers instanceof Headers) return headers.has(name);
  if (Array.isArray(headers)) return headers.some(([key]) => key.toLowerCase() === name);
  for (const key in headers) if (key.toLowerCase() === name) return true;
  return false;
}

/** A copy of `headers` with `Authorization` set to `value` (the caller checked there was none). */
export function withAuthorization(headers: HeadersInit | undefined, value: string): HeadersInit {
  return withHeader(headers, AUTHORIZATION, value);
}

/** A copy of `headers` with `name` (lower case) set to `value` (the caller checked there was none). */
export function withHeader(headers: HeadersInit | undefined, name: string, value: string): HeadersInit {
  if (headers === undefined) return name === AUTHORIZATION ? { authorization: value } : { [name]: value };
  if (headers instanceof Headers) {
    const copy = new Headers(headers);
    copy.set(name, value);
    return copy;
  }
  if (Array.isArray(headers)) return [...headers, [name, value]];
  return recordWith(headers, name, value);
}

/** A copy of `headers` without `names` (lower case); `undefined` stays so. */
export function withoutHeaders(headers: HeadersInit | undefined, names: readonly string[]): HeadersInit | undefined {
  if (headers === undefined || names.length === 0) return headers;
  const copy = new Headers(headers);
  for (const name of names) copy.delete(name);
  return copy;
}
