import { closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { describeFsError } from './fs-error.util.js';

/** A PEM key or certificate chain is a few kilobytes; anything larger is not one. */
const MAX_CREDENTIAL_FILE_BYTES = 64 * 1024;

/** The outcome of reading one credential file without trusting what is at its path. */
export type CredentialFileRead =
  | { readonly ok: true; readonly bytes: Buffer }
  /** `missing`: nothing to read yet (a secret volume mid-swap); `refused`: something is there that is not a credential file. */
  | { readonly ok: false; readonly kind: 'missing' | 'refused'; readonly message: string };

/** What kind of file `stats` describes, in words, when it is not a regular file. */
function fileKind(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

/** Why `stats` is not acceptable for a key or certificate file at `path`, or `undefined`. Never reads content. */
function credentialFileProblem(path: string, stats: Stats): string | undefined {
  if (!stats.isFile()) return `'${path}' is not a regular file (${fileKind(stats)})`;
  if (stats.size > MAX_CREDENTIAL_FILE_BYTES) {
    return `'${path}' holds ${stats.size} bytes; a key or certificate file is at most ${MAX_CREDENTIAL_FILE_BYTES}`;
  }
  return undefined;
}

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * Start-up's synchronous read, with the same rules as {@link readCredentialFile}: a FIFO, a device or a huge file is
 * refused from its metadata (checked on the path, then on the descriptor opened without blocking), never read.
 * Errors from the file system are thrown as they are, for the caller's own words.
 */
export function readCredentialFileSync(path: string): CredentialFileRead {
  const stats = statSync(path);
  // Start-up's own words for a directory: `cannot read … file '…': it is a directory`.
  if (stats.isDirectory()) throw Object.assign(new Error(`EISDIR: ${path}`), { code: 'EISDIR' });
  const problem = credentialFileProblem(path, stats);
  if (problem) return { ok: false, kind: 'refused', message: problem };
  const fd = openSync(path, OPEN_FLAGS);
  try {
    const opened = credentialFileProblem(path, fstatSync(fd));
    if (opened) return { ok: false, kind: 'refused', message: opened };
    const buffer = Buffer.alloc(MAX_CREDENTIAL_FILE_BYTES + 1);
    let length = 0;
    for (;;) {
      const bytesRead = readSync(fd, buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > MAX_CREDENTIAL_FILE_BYTES) return { ok: false, kind: 'refused', message: grewPast(path) };
    }
    return { ok: true, bytes: buffer.subarray(0, length) };
  } finally {
    closeSync(fd);
  }
}

function grewPast(path: string): string {
  return `'${path}' grew past ${MAX_CREDENTIAL_FILE_BYTES} bytes while read; a key or certificate file is at most ${MAX_CREDENTIAL_FILE_BYTES}`;
}

/**
 * Reads a key or certificate file asynchronously, and only if it is a regular file of at most
 * {@link MAX_CREDENTIAL_FILE_BYTES}: the path is checked first (symlinks followed, as a secret volume's `..data`
 * swap needs), then opened without blocking and checked again on the open descriptor, so a FIFO or device swapped
 * in between the two is still refused and never waited on; at most the cap plus one byte is ever read.
 */
export async function readCredentialFile(path: string): Promise<CredentialFileRead> {
  try {
    const problem = credentialFileProblem(path, await stat(path));
    if (problem) return { ok: false, kind: 'refused', message: problem };
  } catch (error) {
    return { ok: false, kind: 'missing', message: `cannot read '${path}': ${describeFsError(error)}` };
  }
  let handle;
  try {
    handle = await open(path, OPEN_FLAGS);
  } catch (error) {
    return { ok: false, kind: 'missing', message: `cannot read '${path}': ${describeFsError(error)}` };
  }
  try {
    const problem = credentialFileProblem(path, await handle.stat());
    if (problem) return { ok: false, kind: 'refused', message: problem };
    const buffer = Buffer.alloc(MAX_CREDENTIAL_FILE_BYTES + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > MAX_CREDENTIAL_FILE_BYTES) {
        return { ok: false, kind: 'refused', message: grewPast(path) };
      }
    }
    return { ok: true, bytes: buffer.subarray(0, length) };
  } catch (error) {
    return { ok: false, kind: 'missing', message: `cannot read '${path}': ${describeFsError(error)}` };
  } finally {
    await handle.close().catch(() => undefined);
  }
}
