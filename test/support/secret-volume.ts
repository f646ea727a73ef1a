import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SecretVolume {
  readonly dir: string;
  readonly keyPath: string;
  readonly certificatePath: string;
  /** Publishes a new version the way the kubelet does: a new timestamped directory, then one `..data` rename. */
  update(files: { key: string; certificate: string }): void;
  /** Removes the current version's directory, as happens for a moment during an update. */
  removeCurrent(): void;
  remove(): void;
}

/**
 * A directory laid out like a mounted Kubernetes secret: `tls.key -> ..data/tls.key`, `..data -> ..<version>/`.
 * Updates swap the `..data` symlink atomically; the files' own paths never change.
 */
export function createSecretVolume(files: { key: string; certificate: string }): SecretVolume {
  const dir = mkdtempSync(join(tmpdir(), 'platform-auth-secret-'));
  let version = 0;
  let current = '';
  const writeVersion = (content: { key: string; certificate: string }): string => {
    version += 1;
    const name = `..2026_11_23_00_00_0${version}.${process.pid}`;
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, 'tls.key'), content.key);
    writeFileSync(join(dir, name, 'tls.crt'), content.certificate);
    return name;
  };
  current = writeVersion(files);
  symlinkSync(current, join(dir, '..data'));
  symlinkSync(join('..data', 'tls.key'), join(dir, 'tls.key'));
  symlinkSync(join('..data', 'tls.crt'), join(dir, 'tls.crt'));
  return {
    dir,
    keyPath: join(dir, 'tls.key'),
    certificatePath: join(dir, 'tls.crt'),
    update(content) {
      const previous = current;
      current = writeVersion(content);
      symlinkSync(current, join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
      rmSync(join(dir, previous), { recursive: true, force: true });
    },
    removeCurrent() {
      rmSync(join(dir, current), { recursive: true, force: true });
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
