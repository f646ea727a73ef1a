import { quotable, type ConfigReport } from '../options/config.report.js';
import { readCredentialFileSync } from './credential-file.reader.js';
import { describeFsError } from './fs-error.util.js';
import { normalizePem } from './pem.util.js';

interface CredentialSource {
  /** Normalised PEM text. */
  readonly text: string;
  /** The option it came from, for messages. */
  readonly option: string;
}

/** Absolute, explicitly relative or home-relative, or a file name with a key or certificate extension. */
function looksLikePath(value: string): boolean {
  return (
    /^(\/|\.{1,2}[\\/]|~[\\/]|[A-Za-z]:[\\/]|\\\\)/.test(value) || /^\S+\.(pem|key|crt|cer|der|p8|pk8)$/i.test(value)
  );
}

/** Text of credential files already read (by path), as the reloader reads them: asynchronously and checked. */
export type PreReadFiles = ReadonlyMap<string, string>;

/**
 * The PEM text of one credential, from its inline option or its path option (never both); problems go to `report`.
 * A path is read from `files` when it is there; otherwise only a regular file of bounded size is read.
 */
export function readSource(
  inline: string | undefined,
  path: string | undefined,
  inlineOption: string,
  pathOption: string,
  what: string,
  report: ConfigReport,
  files?: PreReadFiles,
): CredentialSource | undefined {
  if (inline !== undefined && path !== undefined) {
    report.problem(inlineOption, `set only one of ${inlineOption} and ${pathOption}`);
    return undefined;
  }
  if (path !== undefined) {
    if (typeof path !== 'string' || quotable(path) === undefined) {
      report.problem(
        pathOption,
        `is not a file path${typeof path === 'string' ? ' (it looks like PEM text)' : ''}; put PEM text in ${inlineOption} instead`,
      );
      return undefined;
    }
    let text: string;
    try {
      const preRead = files?.get(path);
      const read = preRead === undefined ? readCredentialFileSync(path) : undefined;
      if (read && !read.ok) {
        report.problem(pathOption, `${what} file ${read.message}`);
        return undefined;
      }
      text = preRead ?? read!.bytes.toString('utf8');
    } catch (error) {
      // A passphrase or token pasted into a *_PATH variable names no file: it is quoted only if it looks like a path.
      const problem = looksLikePath(path)
        ? `cannot read ${what} file '${path}': ${describeFsError(error)}`
        : `cannot read ${what} file: ${describeFsError(error)} (the value is not shown: it does not look like a file path and may be a secret set in the wrong variable)`;
      report.problem(pathOption, problem);
      return undefined;
    }
    if (text.trim() === '') {
      report.problem(pathOption, `${what} file '${path}' is empty`);
      return undefined;
    }
    return { text: normalizePem(text), option: pathOption };
  }
  if (inline !== undefined) {
    if (typeof inline !== 'string') {
      report.problem(inlineOption, 'must be a string of PEM text');
      return undefined;
    }
    if (inline.trim() === '') {
      report.problem(inlineOption, `is empty`);
      return undefined;
    }
    return { text: normalizePem(inline), option: inlineOption };
  }
  return undefined;
}
