import { readFileSync } from 'node:fs';
import { quotable, type ConfigReport } from '../options/config.report.js';
import { describeFsError } from './fs-error.util.js';
import { normalizePem } from './pem.util.js';

export interface CredentialSource {
  /** Normalised PEM text. */
  readonly text: string;
  /** The option it came from, for messages. */
  readonly option: string;
}

/** The PEM text of one credential, from its inline option or its path option (never both); problems go to `report`. */
export function readSource(
  inline: string | undefined,
  path: string | undefined,
  inlineOption: string,
  pathOption: string,
  what: string,
  report: ConfigReport,
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
      text = readFileSync(path, 'utf8');
    } catch (error) {
      report.problem(pathOption, `cannot read ${what} file '${path}': ${describeFsError(error)}`);
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
