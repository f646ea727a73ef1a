import { describe, expect, it } from 'vitest';
import { formatPkcs11Uri, parsePkcs11Uri } from '../../lib/credentials/pkcs11/pkcs11-uri.parser.js';

const MODULE = '?module-path=/usr/lib/softhsm/libsofthsm2.so';

function parsed(text: string) {
  const result = parsePkcs11Uri(text);
  if (result.problems) throw new Error(result.problems.join('; '));
  return result.uri;
}

function problems(text: unknown): string[] {
  return parsePkcs11Uri(text).problems ?? [];
}

describe('RFC 7512 pkcs11: URIs', () => {
  it('reads the token, the object, a percent-encoded id and label, the library and the PIN source', () => {
    const uri = parsed(
      'PKCS11:token=My%20HSM;object=platform%2Dauth;id=%01%a2;serial=42;slot-id=7;type=private;x-vendor=1?module-path=/opt/hsm/lib%20p11.so&pin-source=file:///run/secrets/pin',
    );
    expect(uri).toMatchObject({
      token: 'My HSM',
      object: 'platform-auth',
      serial: '42',
      slotId: 7,
      modulePath: '/opt/hsm/lib p11.so',
      pin: { file: '/run/secrets/pin' },
    });
    expect([...uri.id!]).toEqual([0x01, 0xa2]);
    expect(parsed(`pkcs11:object=k${MODULE}&pin-value=12%2634`).pin).toEqual({ value: '12&34' });
    expect(parsed(`pkcs11:object=%C3%A9t%C3%A9${MODULE}`).object).toBe('été');
  });

  it('shows only the path in messages: never the PIN, the library or vendor attributes', () => {
    expect(parsed(`pkcs11:token=t;object=k;x-secret=1${MODULE}&pin-value=123456`).display).toBe(
      'pkcs11:token=t;object=k',
    );
  });

  it('names every problem by attribute, never quoting a value', () => {
    const pin = 'not-to-be-quoted';
    const all = [
      ...problems(`pkcs11:token=t;pin-value=${pin}${MODULE}`),
      ...problems(`pkcs11:token=t;object=k?pin-value=${pin}&pin-source=file:/p&module-path=/m.so`),
      ...problems(`pkcs11:object=k;object=j${MODULE}&pin-value=${pin}`),
      ...problems(`pkcs11:object=k%zz${MODULE}&pin-value=${pin}`),
      ...problems(`pkcs11:object=k?module-path=/m.so&pin-source=|/bin/ask-pin&pin-value=${pin}`),
    ];
    expect(all).toEqual([
      "'pin-value' belongs in the query (after '?', joined by '&')",
      "names no key: add object=LABEL (the key's CKA_LABEL) or id=%… (its CKA_ID)",
      "set only one of 'pin-value' and 'pin-source'",
      "'object' appears twice",
      "attribute 'object' has a malformed percent-encoding",
      "names no key: add object=LABEL (the key's CKA_LABEL) or id=%… (its CKA_ID)",
      "set only one of 'pin-value' and 'pin-source'",
    ]);
    expect(all.join('\n')).not.toContain(pin);
  });

  it('refuses a value that holds a query attribute, whatever its shape, without repeating it', () => {
    const pin = 'Pq7ZxW93kT';
    const shapes = [
      `pkcs11:token=t1&pin-value=${pin};object=k1${MODULE}`,
      `pkcs11:token=t1&PIN-VALUE=${pin};object=k1${MODULE}`,
      `pkcs11:token=t1%26pin-value%3D${pin};object=k1${MODULE}`,
      `pkcs11:token=t1%2526pin%252Dvalue%253D${pin};object=k1${MODULE}`,
      `pkcs11:token=t1 pin-value=${pin};object=k1${MODULE}`,
      `pkcs11:token=t1;object=k1&pin-value=${pin}${MODULE}`,
      `pkcs11:serial=1&pin-value=${pin};object=k1${MODULE}`,
      `pkcs11:slot-description=s&pin-value=${pin};object=k1${MODULE}`,
      `pkcs11:token=t1;object=k1;library-description=l&pin-value=${pin}${MODULE}`,
      `pkcs11:token=t1;object=k1;id=%01&pin-value=${pin}${MODULE}`,
      `pkcs11:token=t1;object=k1;id=%01%26pin-value%3D${pin}${MODULE}`,
      `pkcs11:token=t1&pin=${pin};object=k1${MODULE}`,
      `pkcs11:token=t1&module-path=/lib.so;object=k1${MODULE}`,
      `pkcs11:token=t1&pin-source=file:/p;object=k1${MODULE}`,
      `pkcs11:token=t1;object=k1${MODULE};pin-value=${pin}`,
      `pkcs11:token=t1;object=k1${MODULE}?pin-value=${pin}`,
      `pkcs11:token=t1;object=k1${MODULE}&pin-source=file:/p%26pin-value%3D${pin}`,
    ];
    for (const shape of shapes) {
      const found = problems(shape);
      expect(found, shape).toContainEqual(
        expect.stringMatching(/^'[a-z-]+' holds another attribute \(name=\) in its value/),
      );
      expect(found.join('\n').toLowerCase(), shape).not.toContain(pin.toLowerCase());
    }
  });

  it('prints no PIN from any URI it accepts, nor from any problem', () => {
    const pin = 'Pq7ZxW93kT';
    const shapes = [
      `pkcs11:token=t1;object=k1${MODULE}&pin-value=${pin}`,
      `pkcs11:token=t1;object=k1;x-pin=${pin}${MODULE}`,
      `pkcs11:token=t1;object=k1;${pin}${MODULE}`,
      `pkcs11:token=t1;object=k1${MODULE}&${pin}`,
      `pkcs11:token=t1;object=k1?pin-value=${pin}`,
    ];
    for (const shape of shapes) {
      const result = parsePkcs11Uri(shape);
      const printed = result.problems
        ? result.problems.join('\n')
        : JSON.stringify({ ...result.uri, pin: undefined, id: undefined });
      expect(printed.toLowerCase(), shape).not.toContain(pin.toLowerCase());
    }
    expect(problems(`pkcs11:token=t1;object=k1;${pin}${MODULE}`)).toEqual(["a segment in the path has no '=value'"]);
  });

  it("keeps RFC 7512's '&' inside a path value, and an id's bytes, when no attribute hides there", () => {
    expect(parsed(`pkcs11:token=R&D;object=k${MODULE}`).token).toBe('R&D');
    expect(parsed(`pkcs11:token=R%26D;object=k${MODULE}`).token).toBe('R&D');
    expect([...parsed(`pkcs11:object=k;id=%26%61%3d${MODULE}`).id!]).toEqual([0x26, 0x61, 0x3d]);
  });

  it('asks for what is missing: the scheme, a key, the library; and refuses what it cannot use', () => {
    expect(problems('/etc/key.pem')).toEqual([
      expect.stringMatching(/^is not a PKCS#11 URI: it must start with 'pkcs11:'/),
    ]);
    expect(problems(42)).toHaveLength(1);
    expect(problems('pkcs11:token=t;object=k')).toEqual([expect.stringMatching(/^needs \?module-path=/)]);
    expect(problems('pkcs11:object=k?module-name=softhsm2')).toEqual([
      expect.stringMatching(/'module-name' is not supported/),
    ]);
    expect(problems(`pkcs11:object=k;type=cert${MODULE}`)).toEqual([
      expect.stringMatching(/names type=cert; the assertion key is a private key/),
    ]);
    expect(problems(`pkcs11:object=k;tokn=t${MODULE}`)).toEqual([
      expect.stringMatching(/^'tokn' is not an RFC 7512 path attribute/),
    ]);
    expect(problems(`pkcs11:object=k${MODULE}&pin-source=|/bin/ask`)).toEqual([
      expect.stringMatching(/'pin-source' must be a file: URI/),
    ]);
    expect(problems(`pkcs11:object=k;slot-id=x${MODULE}`)).toEqual(["attribute 'slot-id' must be a decimal number"]);
  });

  it('writes a URI for the configuration with the id and a PIN file, never a PIN value', () => {
    const uri = parsed(`pkcs11:token=My HSM;object=k${MODULE}&pin-value=123456`);
    const text = formatPkcs11Uri(uri, Buffer.from([1, 255]), '/path/to/pin-file');
    expect(text).toBe(
      'pkcs11:token=My%20HSM;object=k;id=%01%ff?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/path/to/pin-file',
    );
    expect(parsed(text)).toMatchObject({ token: 'My HSM', object: 'k', pin: { file: '/path/to/pin-file' } });
  });

  it('writes a URI without any PIN attribute when neither the URI nor the caller names a PIN file', () => {
    const uri = parsed(`pkcs11:token=t;object=k${MODULE}&pin-value=123456`);
    const text = formatPkcs11Uri({ ...uri, pin: undefined }, undefined);
    expect(text).toBe('pkcs11:token=t;object=k?module-path=/usr/lib/softhsm/libsofthsm2.so');
    expect(parsed(text).pin).toBeUndefined();
  });
});
