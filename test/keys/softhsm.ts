import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Debian's softhsm2 library; `tools/ensure-services.mjs` installs it with `opensc` (pkcs11-tool). */
export const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';
export const USER_PIN = '48151623';
const SO_PIN = '42424242';

/**
 * A throwaway SoftHSM2: its own configuration file and token directory in a temporary folder, pointed at by
 * `SOFTHSM2_CONF` for this test process, never the machine's global tokens. SoftHSM reads its tokens when the
 * library is initialised, which the module does once per process until the last key is closed: create every token
 * (`initToken`) and every key made with pkcs11-tool before the first key opens, in `beforeAll`.
 */
export class SoftHsm {
  readonly conf: string;
  readonly pinFile: string;

  private constructor(readonly dir: string) {
    const tokens = join(dir, 'tokens');
    mkdirSync(tokens);
    this.conf = join(dir, 'softhsm2.conf');
    writeFileSync(this.conf, `directories.tokendir = ${tokens}\nobjectstore.backend = file\nlog.level = ERROR\n`);
    this.pinFile = join(dir, 'user-pin');
    writeFileSync(this.pinFile, `${USER_PIN}\n`, { mode: 0o600 });
  }

  static create(): SoftHsm {
    const hsm = new SoftHsm(mkdtempSync(join(tmpdir(), 'platform-auth-softhsm-')));
    // The library in this process reads it at C_Initialize.
    process.env.SOFTHSM2_CONF = hsm.conf;
    return hsm;
  }

  get env(): Record<string, string> {
    return { PATH: process.env.PATH ?? '/usr/bin:/bin', SOFTHSM2_CONF: this.conf };
  }

  /** A new token with the user PIN {@link USER_PIN}. */
  async initToken(label: string): Promise<void> {
    await run('softhsm2-util', ['--init-token', '--free', '--label', label, '--pin', USER_PIN, '--so-pin', SO_PIN], {
      env: this.env,
    });
  }

  /** `pkcs11:token=…;object=…?module-path=…&pin-source=file:…`, or with `pin-value` when `pin` is given. */
  uri(token: string, object: string, options: { pin?: string; noPin?: boolean; modulePath?: string } = {}): string {
    const query = [`module-path=${options.modulePath ?? SOFTHSM_MODULE}`];
    if (options.pin !== undefined) query.push(`pin-value=${encodeURIComponent(options.pin)}`);
    else if (!options.noPin) query.push(`pin-source=file:${this.pinFile}`);
    return `pkcs11:token=${encodeURIComponent(token)};object=${encodeURIComponent(object)}?${query.join('&')}`;
  }

  /** opensc's pkcs11-tool against this SoftHSM, logged in: an independent look at the token. */
  async pkcs11Tool(token: string, ...args: string[]): Promise<string> {
    const { stdout } = await run(
      'pkcs11-tool',
      ['--module', SOFTHSM_MODULE, '--token-label', token, '--login', '--pin', USER_PIN, ...args],
      { env: this.env },
    );
    return stdout;
  }

  /** The DER (SubjectPublicKeyInfo) of a public key object, read by pkcs11-tool. */
  async publicKeyDer(token: string, label: string): Promise<Buffer> {
    const file = join(this.dir, `${label}.pub.der`);
    await this.pkcs11Tool(token, '--read-object', '--type', 'pubkey', '--label', label, '--output-file', file);
    return readFileSync(file);
  }

  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
