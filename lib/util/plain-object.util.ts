/**
 * An object literal's kind of object: a group of options or fields, not an instance, an array or `null`. An object
 * with no prototype (`Object.create(null)`, what some configuration loaders and parsers build) is plain too: it is a
 * bag of fields all the same, and an option group given that way must be read, merged and sealed like a literal.
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}
