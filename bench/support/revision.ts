import { execFileSync } from 'node:child_process';

/** Which library was measured: the commit, and whether lib/ had uncommitted changes (the build includes them). */
export function describeRevision(): { commit: string; libModified: boolean } {
  try {
    const git = (...args: string[]): string =>
      execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return {
      commit: git('rev-parse', '--short', 'HEAD'),
      libModified: git('status', '--porcelain', '--', 'lib').length > 0,
    };
  } catch {
    return { commit: 'unknown', libModified: false };
  }
}
