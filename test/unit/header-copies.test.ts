import { describe, expect, it } from 'vitest';
import { withAuthorization } from '../../lib/http/clients/fetch-headers.util.js';
import { recordWith, withHeader } from '../../lib/http/clients/undici-headers.util.js';

/** A header record as the global fetch hands it to a dispatcher. */
const fetchHeaders = () => ({ accept: '*/*', 'accept-language': '*', 'user-agent': 'node' });

describe('header copies with one header added', () => {
  it('copy a record as a spread would: its own keys in order, the new one last, the caller untouched', () => {
    const headers = fetchHeaders();
    const copy = recordWith(headers, 'authorization', 'Bearer t');
    expect(Object.entries(copy)).toEqual([...Object.entries(fetchHeaders()), ['authorization', 'Bearer t']]);
    expect(copy).toEqual({ ...headers, authorization: 'Bearer t' });
    expect(headers).toEqual(fetchHeaders());
  });

  it('leave out what a record only inherits, as a spread does', () => {
    const inherited = Object.assign(Object.create({ cookie: 'from the prototype' }) as Record<string, string>, {
      accept: '*/*',
    });
    expect(recordWith(inherited, 'authorization', 'Bearer t')).toEqual({ accept: '*/*', authorization: 'Bearer t' });
  });

  it('give the undici interceptor and PlatformFetch the same record', () => {
    const expected = { ...fetchHeaders(), authorization: 'Bearer t' };
    expect(withHeader(fetchHeaders(), 'authorization', 'Bearer t')).toEqual(expected);
    expect(withAuthorization(fetchHeaders(), 'Bearer t')).toEqual(expected);
  });

  it('make a record of the one header when the request has none', () => {
    expect(withHeader(undefined, 'authorization', 'Bearer t')).toEqual({ authorization: 'Bearer t' });
    expect(withHeader(null, 'idempotency-key', 'k')).toEqual({ 'idempotency-key': 'k' });
  });

  it('copy a header named __proto__ as a header, as a spread does', () => {
    const headers = JSON.parse('{"__proto__": "x", "accept": "*/*"}') as Record<string, string>;
    const copy = recordWith(headers, 'authorization', 'Bearer t');
    expect(Object.entries(copy)).toEqual([
      ['__proto__', 'x'],
      ['accept', '*/*'],
      ['authorization', 'Bearer t'],
    ]);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
  });
});
