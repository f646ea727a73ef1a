/**
 * A random 32-byte key has about 30 distinct byte values; fewer than 16 happens by chance with a probability far
 * below 1e-12, and marks a key made by hand (all zero, a repeated pattern, a counter).
 */
const MIN_DISTINCT_KEY_BYTES = 16;

const HEX_TEXT = /^(?:[0-9a-f]{2})+$/i;

/**
 * The one "looks random" check of a key or secret: fewer than {@link MIN_DISTINCT_KEY_BYTES} distinct byte values
 * is refused. Text in hex is judged by the bytes it spells: its 16 symbols alone would fail a random hex secret
 * (`openssl rand -hex 32`) one time in four.
 */
export function repeatsTooFewBytes(secret: Uint8Array | string): boolean {
  const bytes =
    typeof secret !== 'string' ? secret : HEX_TEXT.test(secret) ? Buffer.from(secret, 'hex') : Buffer.from(secret);
  return new Set(bytes).size < MIN_DISTINCT_KEY_BYTES;
}
