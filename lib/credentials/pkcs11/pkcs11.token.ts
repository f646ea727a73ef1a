import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describeFsError } from '../fs-error.util.js';
import {
  CK,
  Pkcs11SetupError,
  acquirePkcs11Module,
  pkcs11ReturnValue,
  type Handle,
  type Pkcs11Attribute,
  type Pkcs11Functions,
  type SharedPkcs11Module,
} from './pkcs11.binding.js';
import type { Pkcs11Uri } from './pkcs11-uri.parser.js';

/** An open, logged-in session on the token a URI names; `close()` ends the session and releases the library. */
export interface TokenConnection {
  readonly module: SharedPkcs11Module;
  readonly functions: Pkcs11Functions;
  readonly slot: Handle;
  /** The token's label, for messages. */
  readonly label: string;
  readonly session: Handle;
  /** Kept to log in again after the token dropped the sessions; never printed. */
  readonly pin: string | undefined;
  close(): void;
}

/**
 * Loads the URI's library, finds its one token, opens a session and logs in. Each step needs the one before, so the
 * first failure ends it with a `Pkcs11SetupError` whose message names the step and never the PIN.
 */
export async function connectToken(uri: Pkcs11Uri, options: { readWrite?: boolean } = {}): Promise<TokenConnection> {
  const pin = readPin(uri);
  const module = await acquirePkcs11Module(uri.modulePath!);
  const functions = module.functions;
  let session: Handle | undefined;
  try {
    const { slot, label, flags } = findToken(functions, uri);
    session = call(
      () => functions.C_OpenSession(slot, CK.CKF_SERIAL_SESSION | (options.readWrite ? CK.CKF_RW_SESSION : 0)),
      `cannot open a session on token '${label}'`,
    );
    login(functions, session, label, flags, pin);
    const opened = session;
    return {
      module,
      functions,
      slot,
      label,
      session: opened,
      pin,
      close: () => {
        try {
          functions.C_CloseSession(opened);
        } catch {
          // Already gone with the token: nothing left to close.
        }
        module.release();
      },
    };
  } catch (error) {
    if (session) {
      try {
        functions.C_CloseSession(session);
      } catch {
        // The session is being discarded anyway.
      }
    }
    module.release();
    throw error;
  }
}

/** Logs in as the user; an earlier login of this process (another key on the token) is fine. */
export function login(
  functions: Pkcs11Functions,
  session: Handle,
  label: string,
  flags: number,
  pin: string | undefined,
): void {
  if ((flags & CK.CKF_LOGIN_REQUIRED) === 0) return;
  const pinPad = (flags & CK.CKF_PROTECTED_AUTHENTICATION_PATH) !== 0;
  if (pin === undefined && !pinPad) {
    throw new Pkcs11SetupError(
      `token '${label}' needs the user PIN: add pin-source=file:/path/of/pin-file to the URI (or pin-value=)`,
    );
  }
  try {
    functions.C_Login(session, CK.CKU_USER, pin);
  } catch (error) {
    const code = pkcs11ReturnValue(error);
    if (code === 'CKR_USER_ALREADY_LOGGED_IN') return;
    throw new Pkcs11SetupError(loginProblem(code, label));
  }
}

function loginProblem(code: string | undefined, label: string): string {
  switch (code) {
    case 'CKR_PIN_INCORRECT':
      return `the PIN is wrong for token '${label}' (the PIN is not shown); check pin-source or pin-value`;
    case 'CKR_PIN_LOCKED':
      return `the user PIN of token '${label}' is locked after too many wrong PINs; the token's security officer must reset it`;
    case 'CKR_PIN_LEN_RANGE':
      return `the PIN has a length token '${label}' does not accept (the PIN is not shown); check pin-source or pin-value`;
    case 'CKR_USER_PIN_NOT_INITIALIZED':
      return `token '${label}' has no user PIN yet: initialise it (softhsm2-util --init-token, or the HSM's tools)`;
    default:
      return `logging in to token '${label}' failed (${code ?? 'unknown error'})`;
  }
}

/** The PIN the URI gives, read from its file when it names one. */
function readPin(uri: Pkcs11Uri): string | undefined {
  if (!uri.pin) return undefined;
  if ('value' in uri.pin) return uri.pin.value;
  let text: string;
  try {
    text = readFileSync(uri.pin.file, 'utf8');
  } catch (error) {
    throw new Pkcs11SetupError(`pin-source file '${uri.pin.file}' cannot be read: ${describeFsError(error)}`);
  }
  const pin = text.replace(/\r?\n$/, '');
  if (pin === '') throw new Pkcs11SetupError(`pin-source file '${uri.pin.file}' is empty`);
  return pin;
}

/** The one token the URI's path attributes match among the slots with a token present. */
function findToken(functions: Pkcs11Functions, uri: Pkcs11Uri): { slot: Handle; label: string; flags: number } {
  const slots = call(() => functions.C_GetSlotList(true), 'cannot list the slots');
  const present = slots.flatMap((slot) => {
    const info = call(() => functions.C_GetTokenInfo(slot), 'cannot read a token');
    // A blank token (SoftHSM keeps one in its last slot) holds no key.
    if ((info.flags & CK.CKF_TOKEN_INITIALIZED) === 0) return [];
    const slotInfo = uri.slotDescription || uri.slotManufacturer ? functions.C_GetSlotInfo(slot) : undefined;
    return {
      slot,
      label: info.label.trim(),
      flags: info.flags,
      matches:
        same(uri.token, info.label) &&
        same(uri.manufacturer, info.manufacturerID) &&
        same(uri.model, info.model) &&
        same(uri.serial, info.serialNumber) &&
        same(uri.slotDescription, slotInfo?.slotDescription) &&
        same(uri.slotManufacturer, slotInfo?.manufacturerID) &&
        (uri.slotId === undefined || readUlong(slot) === uri.slotId),
    };
  });
  const matching = present.filter((token) => token.matches);
  if (matching.length === 1) return matching[0];
  const listed = present.map((token) => `'${token.label}'`).join(', ') || 'none';
  if (matching.length === 0) {
    throw new Pkcs11SetupError(`no token matches ${describeTokenAttributes(uri)}; tokens present: ${listed}`);
  }
  throw new Pkcs11SetupError(
    `${matching.length} tokens match ${describeTokenAttributes(uri)} (${listed}); add token=, serial= or slot-id= to choose one`,
  );
}

function describeTokenAttributes(uri: Pkcs11Uri): string {
  const given = (
    [
      ['token', uri.token],
      ['manufacturer', uri.manufacturer],
      ['model', uri.model],
      ['serial', uri.serial],
      ['slot-id', uri.slotId],
    ] as const
  ).filter(([, value]) => value !== undefined);
  return given.length === 0 ? 'the URI' : given.map(([name, value]) => `${name}='${String(value)}'`).join(', ');
}

/** PKCS#11 pads its text fields with blanks. */
function same(wanted: string | undefined, actual: string | undefined): boolean {
  return wanted === undefined || wanted === actual?.trim();
}

/** Runs one call of the library, turning its failure into a setup error that names the step and the return value. */
function call<T>(run: () => T, step: string): T {
  try {
    return run();
  } catch (error) {
    if (error instanceof Pkcs11SetupError) throw error;
    throw new Pkcs11SetupError(`${step} (${pkcs11ReturnValue(error) ?? 'unknown error'})`);
  }
}

/** The private keys (or public keys) with the URI's label and id. */
export function findObjects(
  functions: Pkcs11Functions,
  session: Handle,
  objectClass: number,
  uri: Pick<Pkcs11Uri, 'object' | 'id'>,
  max = 2,
): Handle[] {
  const template: Pkcs11Attribute[] = [{ type: CK.CKA_CLASS, value: objectClass }];
  if (uri.object !== undefined) template.push({ type: CK.CKA_LABEL, value: uri.object });
  if (uri.id !== undefined) template.push({ type: CK.CKA_ID, value: uri.id });
  return call(() => {
    functions.C_FindObjectsInit(session, template);
    try {
      return functions.C_FindObjects(session, max);
    } finally {
      functions.C_FindObjectsFinal(session);
    }
  }, 'cannot search the token');
}

/** One attribute's bytes, or `undefined` when the token will not tell (sensitive, or unknown to it). */
export function attribute(
  functions: Pkcs11Functions,
  session: Handle,
  object: Handle,
  type: number,
): Buffer | undefined {
  try {
    return functions.C_GetAttributeValue(session, object, [{ type }])[0]?.value;
  } catch {
    return undefined;
  }
}

/** A CK_BBOOL attribute, or `undefined` when unknown. */
export function flagAttribute(
  functions: Pkcs11Functions,
  session: Handle,
  object: Handle,
  type: number,
): boolean | undefined {
  const value = attribute(functions, session, object, type);
  return value === undefined || value.length === 0 ? undefined : value[0] !== 0;
}

/** How the URI names its key in messages: `object='…'`, `id=%01%02`. */
export function describeKeyAttributes(uri: Pick<Pkcs11Uri, 'object' | 'id'>): string {
  const parts: string[] = [];
  if (uri.object !== undefined) parts.push(`object='${uri.object}'`);
  if (uri.id !== undefined) parts.push(`id=${[...uri.id].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')}`);
  return parts.join(' and ');
}

/** An RSA public key from a token's modulus and exponent attributes. */
export function rsaPublicKey(modulus: Buffer, exponent: Buffer): KeyObject {
  return createPublicKey({
    key: { kty: 'RSA', n: stripZeros(modulus).toString('base64url'), e: stripZeros(exponent).toString('base64url') },
    format: 'jwk',
  });
}

function stripZeros(value: Buffer): Buffer {
  let start = 0;
  while (start < value.length - 1 && value[start] === 0) start++;
  return value.subarray(start);
}

/** A CK_ULONG (an attribute, a slot handle) in the library's byte order, little-endian on the platforms Node runs on. */
export function readUlong(value: Buffer): number {
  return value.length >= 8 ? Number(value.readBigUInt64LE(0)) : value.readUInt32LE(0);
}
