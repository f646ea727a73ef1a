import type { AssertionKey } from './assertion-key.interface.js';

interface JwsHeader {
  readonly alg: string;
  readonly [parameter: string]: unknown;
}

const encoder = new TextEncoder();

/** `base64url(header) "." base64url(payload)`: the bytes an RS256 signature covers (RFC 7515 §5.1). */
function encodeSigningInput(header: JwsHeader, payload: Uint8Array): string {
  return `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(payload).toString('base64url')}`;
}

/**
 * A compact JWS of `payload` signed by `key`, whatever holds it (a PEM key in memory, a token, a signer): the signing
 * input is built here (JSON of the header, then base64url of each part), so the header, the claims and their
 * encoding are the same bytes for every key source.
 */
export async function signCompactJws(key: AssertionKey, header: JwsHeader, payload: Uint8Array): Promise<string> {
  const input = encodeSigningInput(header, payload);
  const signature = await key.sign(encoder.encode(input));
  return `${input}.${Buffer.from(signature).toString('base64url')}`;
}
