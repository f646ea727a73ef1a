import type { ConfigReport } from '../options/config.report.js';
import {
  loadCredentials,
  openCredentials,
  type CredentialSources,
  type LoadedCredentials,
} from './credentials.loader.js';
import type { PreReadFiles } from './credential-source.reader.js';

/** The next pair must not be the current one: the switch would change nothing, and the rotation not happen. */
function checkDiffers(
  sources: CredentialSources,
  current: LoadedCredentials | undefined,
  next: LoadedCredentials,
  report: ConfigReport,
): void {
  if (!current || current.thumbprint !== next.thumbprint) return;
  const { names } = sources;
  const option = !next.certificate
    ? sources.privateKeyPath !== undefined
      ? names.privateKeyPath
      : names.privateKey
    : sources.certificatePath !== undefined
      ? names.certificatePath
      : names.certificate;
  report.problem(
    option,
    `is the current pair (thumbprint ${next.thumbprint}): the next pair must be a new key and certificate, made with keygen --next`,
  );
}

/** Start-up's reading of the next pair, for every key source, as {@link openCredentials}. */
export async function openNextCredentials(
  sources: CredentialSources,
  current: LoadedCredentials | undefined,
  nowMs: number,
  report: ConfigReport,
): Promise<LoadedCredentials | undefined> {
  const before = report.problems.length;
  const next = await openCredentials(sources, nowMs, report);
  if (next) checkDiffers(sources, current, next, report);
  if (report.problems.length > before) {
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
  report: ConfigReport,
  files?: PreReadFiles,
): LoadedCredentials | undefined {
  const before = report.problems.length;
  const next = loadCredentials(sources, nowMs, report, files);
  if (next) checkDiffers(sources, current, next, report);
  return report.problems.length > before ? undefined : next;
}
