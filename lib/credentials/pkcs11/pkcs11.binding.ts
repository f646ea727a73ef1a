import { realpathSync } from 'node:fs';

/**
 * The part of `pkcs11js` (an optional peer, loaded with `import()` only when a `pkcs11:` URI is configured) this
 * library calls, typed here so that users without it need nothing installed. Constants are PKCS#11 v2.40's.
 */
export type Handle = Buffer;

export interface Pkcs11Attribute {
  readonly type: number;
  readonly value?: number | boolean | string | Buffer;
}

interface Pkcs11TokenInfo {
  readonly label: string;
  readonly manufacturerID: string;
  readonly model: string;
  readonly serialNumber: string;
  readonly flags: number;
}

export interface Pkcs11Functions {
  load(path: string): void;
  close(): void;
  C_Initialize(options?: { flags?: number }): void;
  C_Finalize(): void;
  C_GetSlotList(tokenPresent?: boolean): Handle[];
  C_GetSlotInfo(slot: Handle): { readonly slotDescription: string; readonly manufacturerID: string };
  C_GetTokenInfo(slot: Handle): Pkcs11TokenInfo;
  C_GetMechanismInfo(slot: Handle, mechanism: number): { readonly flags: number };
  C_OpenSession(slot: Handle, flags: number): Handle;
  C_CloseSession(session: Handle): void;
  C_CloseAllSessions(slot: Handle): void;
  C_Login(session: Handle, userType: number, pin?: string): void;
  C_FindObjectsInit(session: Handle, template: Pkcs11Attribute[]): void;
  C_FindObjects(session: Handle, maxObjectCount: number): Handle[];
  C_FindObjectsFinal(session: Handle): void;
  C_GetAttributeValue(
    session: Handle,
    object: Handle,
    template: Pkcs11Attribute[],
  ): { readonly type: number; readonly value: Buffer }[];
  C_SignInit(session: Handle, mechanism: { mechanism: number }, key: Handle): void;
  C_SignAsync(session: Handle, data: Buffer, out: Buffer): Promise<Buffer>;
  C_GenerateKeyPairAsync(
    session: Handle,
    mechanism: { mechanism: number },
    publicTemplate: Pkcs11Attribute[],
    privateTemplate: Pkcs11Attribute[],
  ): Promise<{ readonly publicKey: Handle; readonly privateKey: Handle }>;
}

interface Pkcs11Binding {
  readonly PKCS11: new () => Pkcs11Functions;
}

export const CK = {
  CKF_OS_LOCKING_OK: 0x2,
  CKF_RW_SESSION: 0x2,
  CKF_SERIAL_SESSION: 0x4,
  CKF_LOGIN_REQUIRED: 0x4,
  CKF_PROTECTED_AUTHENTICATION_PATH: 0x100,
  CKF_TOKEN_INITIALIZED: 0x400,
  CKF_SIGN: 0x800,
  CKU_USER: 1,
  CKO_PUBLIC_KEY: 2,
  CKO_PRIVATE_KEY: 3,
  CKK_RSA: 0,
  CKA_CLASS: 0x0,
  CKA_TOKEN: 0x1,
  CKA_PRIVATE: 0x2,
  CKA_LABEL: 0x3,
  CKA_KEY_TYPE: 0x100,
  CKA_ID: 0x102,
  CKA_SENSITIVE: 0x103,
  CKA_ENCRYPT: 0x104,
  CKA_DECRYPT: 0x105,
  CKA_WRAP: 0x106,
  CKA_UNWRAP: 0x107,
  CKA_SIGN: 0x108,
  CKA_VERIFY: 0x10a,
  CKA_DERIVE: 0x10c,
  CKA_MODULUS: 0x120,
  CKA_MODULUS_BITS: 0x121,
  CKA_PUBLIC_EXPONENT: 0x122,
  CKA_EXTRACTABLE: 0x162,
  CKA_NEVER_EXTRACTABLE: 0x164,
  CKA_ALWAYS_SENSITIVE: 0x165,
  CKA_ALWAYS_AUTHENTICATE: 0x202,
  CKM_RSA_PKCS_KEY_PAIR_GEN: 0x0,
  CKM_SHA256_RSA_PKCS: 0x40,
} as const;

/** A PKCS#11 return value's name (`CKR_PIN_INCORRECT`) from an error of the binding, or `undefined`. */
export function pkcs11ReturnValue(error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : '';
  return /^CKR_[A-Z_]+$/.test(message) ? message : undefined;
}

/** Setting up the token failed; the message is fit for the start-up report (no PIN, no key material). */
export class Pkcs11SetupError extends Error {
  override readonly name = 'Pkcs11SetupError';
}

const PKCS11_BINDING_MISSING =
  'needs the PKCS#11 binding: npm install pkcs11js (a native addon, built on install by node-gyp with python3, make and a C++ compiler)';

/**
 * A loaded and initialised PKCS#11 library. Cryptoki allows one `C_Initialize` per library per process, so every key
 * of the process that uses the same library shares one; the last to release it finalises it.
 */
export interface SharedPkcs11Module {
  readonly functions: Pkcs11Functions;
  readonly path: string;
  release(): void;
}

interface ModuleEntry {
  readonly functions: Pkcs11Functions;
  users: number;
  /** Whether this library called C_Initialize (another component of the process may have). */
  readonly initialized: boolean;
}

// Process-wide on purpose: the library's own state (initialisation, login) is per process, not per module instance.
const modules = new Map<string, ModuleEntry>();

let bindingLoad: Promise<Pkcs11Binding> | undefined;

function loadBinding(): Promise<Pkcs11Binding> {
  bindingLoad ??= (import('pkcs11js') as Promise<unknown>).then(
    (loaded) => {
      const binding = ((loaded as { default?: unknown }).default ?? loaded) as Partial<Pkcs11Binding>;
      if (typeof binding.PKCS11 !== 'function') throw new Pkcs11SetupError(PKCS11_BINDING_MISSING);
      return binding as Pkcs11Binding;
    },
    () => {
      bindingLoad = undefined;
      throw new Pkcs11SetupError(PKCS11_BINDING_MISSING);
    },
  );
  return bindingLoad;
}

/** The library at `modulePath`, loaded and initialised once per process. */
export async function acquirePkcs11Module(modulePath: string): Promise<SharedPkcs11Module> {
  const binding = await loadBinding();
  let path: string;
  try {
    path = realpathSync(modulePath);
  } catch {
    throw new Pkcs11SetupError(
      `module-path '${modulePath}' does not exist: install the token's PKCS#11 library there, or correct the path`,
    );
  }
  let entry = modules.get(path);
  if (!entry) {
    const functions = new binding.PKCS11();
    try {
      functions.load(path);
    } catch (error) {
      const reason = error instanceof Error ? error.message.split('\n')[0].slice(0, 200) : 'unknown error';
      throw new Pkcs11SetupError(`module-path '${modulePath}' cannot be loaded as a PKCS#11 library (${reason})`);
    }
    let initialized = true;
    try {
      // Signatures run on libuv's threads, so the library must lock for itself.
      functions.C_Initialize({ flags: CK.CKF_OS_LOCKING_OK });
    } catch (error) {
      if (pkcs11ReturnValue(error) === 'CKR_CRYPTOKI_ALREADY_INITIALIZED') initialized = false;
      else {
        functions.close();
        throw new Pkcs11SetupError(
          `module-path '${modulePath}' failed to initialise (${pkcs11ReturnValue(error) ?? 'unknown error'}); for SoftHSM2, check SOFTHSM2_CONF and its token directory`,
        );
      }
    }
    entry = { functions, users: 0, initialized };
    modules.set(path, entry);
  }
  entry.users += 1;
  const held = entry;
  let released = false;
  return {
    functions: held.functions,
    path,
    release: () => {
      if (released) return;
      released = true;
      held.users -= 1;
      if (held.users > 0) return;
      modules.delete(path);
      try {
        if (held.initialized) held.functions.C_Finalize();
      } finally {
        held.functions.close();
      }
    },
  };
}
