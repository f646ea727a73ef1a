/**
 * RFC 7512 `pkcs11:` URIs: path attributes (which token, which object) separated by `;`, then after `?` query
 * attributes (which library, which PIN) separated by `&`, values percent-encoded. Problems name attributes, never
 * values: the query may hold the PIN.
 */

/** A parsed URI. Text values are decoded; `id` is bytes. */
export interface Pkcs11Uri {
  readonly token?: string;
  readonly manufacturer?: string;
  readonly serial?: string;
  readonly model?: string;
  readonly slotId?: number;
  readonly slotDescription?: string;
  readonly slotManufacturer?: string;
  readonly object?: string;
  readonly id?: Buffer;
  readonly modulePath?: string;
  readonly pin?: { readonly value: string } | { readonly file: string };
  /** `pkcs11:` and the path attributes as given, for messages: no query, so no PIN and no library path. */
  readonly display: string;
}

type Pkcs11UriParse = { readonly uri: Pkcs11Uri; readonly problems?: undefined } | { readonly problems: string[] };

const PATH_ATTRIBUTES = new Set([
  'token',
  'manufacturer',
  'serial',
  'model',
  'library-manufacturer',
  'library-description',
  'library-version',
  'object',
  'type',
  'id',
  'slot-description',
  'slot-manufacturer',
  'slot-id',
]);
const QUERY_ATTRIBUTES = new Set(['pin-source', 'pin-value', 'module-name', 'module-path']);
/** Path attributes that only narrow the library, which `module-path` already names: accepted, not compared. */
const LIBRARY_ATTRIBUTES = new Set(['library-manufacturer', 'library-description', 'library-version']);

export function parsePkcs11Uri(text: unknown): Pkcs11UriParse {
  if (typeof text !== 'string' || !/^pkcs11:/i.test(text.trim())) {
    return {
      problems: ["is not a PKCS#11 URI: it must start with 'pkcs11:' (RFC 7512), e.g. pkcs11:token=…;object=…"],
    };
  }
  const body = text.trim().slice('pkcs11:'.length);
  const queryStart = body.indexOf('?');
  const pathText = queryStart === -1 ? body : body.slice(0, queryStart);
  const queryText = queryStart === -1 ? '' : body.slice(queryStart + 1);
  const problems: string[] = [];
  const path = attributes(pathText, ';', 'path', PATH_ATTRIBUTES, problems);
  const query = attributes(queryText, '&', 'query', QUERY_ATTRIBUTES, problems);

  const decoded = (name: string, from: Map<string, string>): string | undefined => {
    const raw = from.get(name);
    if (raw === undefined) return undefined;
    const bytes = percentDecode(raw);
    if (!bytes) {
      problems.push(`attribute '${name}' has a malformed percent-encoding`);
      return undefined;
    }
    return bytes.toString('utf8');
  };

  const type = decoded('type', path);
  if (type !== undefined && type !== 'private') {
    problems.push(
      'names type=' +
        (/^[a-z-]{1,20}$/.test(type) ? type : '…') +
        '; the assertion key is a private key (type=private)',
    );
  }
  const slotIdText = decoded('slot-id', path);
  const slotId = slotIdText === undefined ? undefined : /^\d{1,15}$/.test(slotIdText) ? Number(slotIdText) : Number.NaN;
  if (Number.isNaN(slotId)) problems.push("attribute 'slot-id' must be a decimal number");
  const rawId = path.get('id');
  const id = rawId === undefined ? undefined : percentDecode(rawId);
  if (rawId !== undefined && (!id || id.length === 0))
    problems.push("attribute 'id' must be the key's CKA_ID, percent-encoded bytes (id=%01%02)");
  const object = decoded('object', path);
  if (object === undefined && rawId === undefined) {
    problems.push("names no key: add object=LABEL (the key's CKA_LABEL) or id=%… (its CKA_ID)");
  }

  if (query.has('module-name') && !query.has('module-path')) {
    problems.push(
      "attribute 'module-name' is not supported: give the library's file with module-path=/path/to/module.so",
    );
  }
  const modulePath = decoded('module-path', query);
  if (modulePath === undefined && !query.has('module-name')) {
    problems.push(
      'needs ?module-path=… : the PKCS#11 library of the token (SoftHSM2: /usr/lib/softhsm/libsofthsm2.so)',
    );
  }
  let pin: Pkcs11Uri['pin'];
  if (query.has('pin-value') && query.has('pin-source')) problems.push("set only one of 'pin-value' and 'pin-source'");
  else if (query.has('pin-value')) {
    const value = decoded('pin-value', query);
    if (value !== undefined) pin = { value };
  } else if (query.has('pin-source')) {
    const source = decoded('pin-source', query);
    const file = source === undefined ? undefined : pinFile(source);
    if (source !== undefined && file === undefined) {
      problems.push(
        "attribute 'pin-source' must be a file: URI of a file holding the PIN (pin-source=file:/run/secrets/pin)",
      );
    }
    if (file !== undefined) pin = { file };
  }
  if (problems.length > 0) return { problems };

  const shown = pathText
    .split(';')
    .filter((pair) => pair !== '' && !pair.startsWith('x-'))
    .join(';');
  return {
    uri: {
      token: decoded('token', path),
      manufacturer: decoded('manufacturer', path),
      serial: decoded('serial', path),
      model: decoded('model', path),
      slotId,
      slotDescription: decoded('slot-description', path),
      slotManufacturer: decoded('slot-manufacturer', path),
      object,
      id,
      modulePath,
      pin,
      display: `pkcs11:${shown}`,
    },
  };
}

/** `name=value` pairs of one component; unknown and repeated names are problems (a typo would match nothing). */
function attributes(
  text: string,
  separator: string,
  component: 'path' | 'query',
  known: ReadonlySet<string>,
  problems: string[],
): Map<string, string> {
  const found = new Map<string, string>();
  for (const pair of text.split(separator)) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const name = (equals === -1 ? pair : pair.slice(0, equals)).toLowerCase();
    const printable = /^[a-z][a-z0-9-]{0,30}$/.test(name) ? `'${name}'` : 'an attribute';
    if (equals === -1) {
      // Text without '=' is not a name: it may be a PIN put in its own segment.
      const named = PATH_ATTRIBUTES.has(name) || QUERY_ATTRIBUTES.has(name) ? printable : 'a segment';
      problems.push(`${named} in the ${component} has no '=value'`);
      continue;
    }
    if (name.startsWith('x-')) continue;
    if (!known.has(name)) {
      const other = component === 'path' ? QUERY_ATTRIBUTES : PATH_ATTRIBUTES;
      problems.push(
        other.has(name)
          ? `${printable} belongs in the ${component === 'path' ? "query (after '?', joined by '&')" : "path (before '?', joined by ';')"}`
          : `${printable} is not an RFC 7512 ${component} attribute (known: ${[...known].join(', ')})`,
      );
      continue;
    }
    if (found.has(name)) {
      problems.push(`${printable} appears twice`);
      continue;
    }
    const value = pair.slice(equals + 1);
    // The PIN is the one value never printed; any other may be, in a message or by doctor.
    if (name !== 'pin-value' && holdsAttribute(value, name === 'id')) {
      problems.push(
        `${printable} holds another attribute (name=) in its value: path attributes are joined by ';', and ${[...QUERY_ATTRIBUTES].join(', ')} go in the query, after '?', joined by '&'`,
      );
      continue;
    }
    if (!LIBRARY_ATTRIBUTES.has(name)) found.set(name, value);
  }
  return found;
}

/** A query attribute written anywhere in a value: `module-path=/lib.so;pin-value=…`. */
const QUERY_ATTRIBUTE_IN_VALUE = /(?:pin-value|pin-source|module-path|module-name)\s*=/i;
/** Any attribute joined with `&`, in a value where `&` is not the separator: `token=t1&pin=…`. */
const JOINED_ATTRIBUTE = /&\s*[a-z][a-z0-9-]*\s*=/i;

/**
 * Whether `raw` holds an attribute, as written or percent-encoded (once, or twice: `%2526` decodes to `%26`). RFC 7512
 * allows `&` inside a path value, so `pkcs11:token=t1&pin-value=PIN;object=k` names the token `t1&pin-value=PIN`,
 * which the message for a missing token would print. `bytes`: the value is an `id`, whose random bytes may decode to
 * an `&` before a letter and a `=`, so only the query attributes' names count once decoded.
 */
function holdsAttribute(raw: string, bytes: boolean): boolean {
  if (JOINED_ATTRIBUTE.test(raw)) return true;
  let text = raw;
  for (let round = 0; round < 3; round++) {
    const decoded = percentDecode(text)?.toString('utf8');
    if (decoded === undefined || decoded === text) break;
    text = decoded;
    if (!bytes && JOINED_ATTRIBUTE.test(text)) return true;
  }
  return QUERY_ATTRIBUTE_IN_VALUE.test(raw) || QUERY_ATTRIBUTE_IN_VALUE.test(text);
}

/** Percent-decoded bytes, or `undefined` for a malformed escape. */
function percentDecode(value: string): Buffer | undefined {
  const bytes: number[] = [];
  for (let index = 0; index < value.length; index++) {
    if (value[index] !== '%') {
      const char = String.fromCodePoint(value.codePointAt(index)!);
      bytes.push(...Buffer.from(char, 'utf8'));
      index += char.length - 1;
      continue;
    }
    const hex = value.slice(index + 1, index + 3);
    if (!/^[0-9a-fA-F]{2}$/.test(hex)) return undefined;
    bytes.push(parseInt(hex, 16));
    index += 2;
  }
  return Buffer.from(bytes);
}

/** The path of a `file:` pin-source (`file:/p`, `file:///p`), or `undefined` for anything else (`|program`). */
function pinFile(source: string): string | undefined {
  const match = /^file:(?:\/\/(?:localhost)?)?(\/.*)$/i.exec(source);
  return match ? match[1] : undefined;
}

/**
 * A URI for `uri` with the key's `id`, its library, and a PIN file instead of any PIN value: what keygen prints for
 * the configuration. `pinFile` is used when the URI gave none (a placeholder the user fills in); without either, the
 * URI has no PIN attribute at all (what keygen keeps beside the certificate).
 */
export function formatPkcs11Uri(uri: Pkcs11Uri, id: Uint8Array | undefined, pinFile?: string): string {
  const path: string[] = [];
  const text = (name: string, value: string | undefined) => {
    if (value !== undefined) path.push(`${name}=${percentEncode(Buffer.from(value, 'utf8'))}`);
  };
  text('token', uri.token);
  text('manufacturer', uri.manufacturer);
  text('model', uri.model);
  text('serial', uri.serial);
  if (uri.slotId !== undefined) path.push(`slot-id=${uri.slotId}`);
  text('object', uri.object);
  const keyId = id ?? uri.id;
  if (keyId !== undefined) path.push(`id=${[...keyId].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')}`);
  const file = uri.pin && 'file' in uri.pin ? uri.pin.file : pinFile;
  const query = [`module-path=${percentEncode(Buffer.from(uri.modulePath ?? '', 'utf8'))}`];
  if (file !== undefined) query.push(`pin-source=file:${file}`);
  return `pkcs11:${path.join(';')}?${query.join('&')}`;
}

/** RFC 7512's pk11-pchar: unreserved characters and a few others stay, everything else is %XX. */
function percentEncode(bytes: Buffer): string {
  return [...bytes]
    .map((b) => {
      const char = String.fromCharCode(b);
      return /[A-Za-z0-9\-._~:[\]@!$'()*+,/|]/.test(char) && b < 0x80 ? char : `%${b.toString(16).padStart(2, '0')}`;
    })
    .join('');
}
