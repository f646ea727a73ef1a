import type { ConfigReport } from '../options/config.report.js';
import {
  loadCredentials,
  openCredentials,
  type CredentialSources,
  type LoadedCredentials,
} from './credentials.loader.js';
import type { PreReadFiles } from './credential-source.reader.js';
import { KeyPairReport } from './key-pair.report.js';

/** The next pair must not be the current one: the switch would change nothing, and the rotation not happen. */
function checkDiffers(current: LoadedCredentials | undefined, next: LoadedCredentials, report: ConfigReport): void {
  if (current && current.thumbprint === next.thumbprint) {
    report.problem(
      next.certificate ? 'certificate' : 'privateKey',
      `is the current pair (thumbprint ${next.thumbprint}): the next pair must be a new key and certificate, made with keygen --next`,
    );
  }
}

/** Start-up's reading of the next pair, for every key source, as {@link openCredentials}; problems go to `parent`. */
export async function openNextCredentials(
  sources: CredentialSources,
  current: LoadedCredentials | undefined,
  nowMs: number,
  parent: ConfigReport,
): Promise<LoadedCredentials | undefined> {
  const report = new KeyPairReport(parent, 'next');
  const next = await openCredentials(sources, nowMs, report);
  if (next) checkDiffers(current, next, report);
  if (report.problems.length > 0) {
    await next?.key.close();
    return undefined;
  }
  return next;
}

/** The next pair from PEM sources, synchronously (start-up without a token or signer, and file reloads). */
export function loadNextCredentials(
  sources: CredentialSources,
  current: LoadedCredentials | undefined,
  nowMs: number,
  parent: ConfigReport,
  files?: PreReadFiles,
): LoadedCredentials | undefined {
  const report = new KeyPairReport(parent, 'next');
  const next = loadCredentials(sources, nowMs, report, files);
  if (next) checkDiffers(current, next, report);
  return report.problems.length > 0 ? undefined : next;
}
