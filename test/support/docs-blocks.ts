import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const repositoryRoot = fileURLToPath(new URL('../..', import.meta.url));

/** One fenced TypeScript block of a Markdown file. */
export interface DocsBlock {
  /** The file, relative to the repository root. */
  readonly file: string;
  /** Line of the opening fence, 1-based. */
  readonly line: number;
  readonly code: string;
  /** Set by a `<!-- not-compiled: reason -->` comment just before the block: not code to copy as it stands. */
  readonly notCompiled?: string;
}

const OPENING = /^(\s*)```(?:ts|typescript)\s*$/;
const NOT_COMPILED = /^\s*<!--\s*not-compiled:\s*(.+?)\s*-->\s*$/;

/** The ```ts blocks of `file` (relative to the repository root), in order, with their indentation removed. */
export function typescriptBlocks(file: string): DocsBlock[] {
  const lines = readFileSync(join(repositoryRoot, file), 'utf8').split('\n');
  const blocks: DocsBlock[] = [];
  for (let index = 0; index < lines.length; index++) {
    const opening = OPENING.exec(lines[index]);
    if (!opening) continue;
    const indent = opening[1];
    const start = index;
    const body: string[] = [];
    for (index++; index < lines.length && lines[index].trim() !== '```'; index++)
      body.push(lines[index].startsWith(indent) ? lines[index].slice(indent.length) : lines[index]);
    let before = start - 1;
    while (before >= 0 && lines[before].trim() === '') before--;
    const marker = before >= 0 ? NOT_COMPILED.exec(lines[before]) : null;
    blocks.push({ file, line: start + 1, code: `${body.join('\n')}\n`, notCompiled: marker?.[1] });
  }
  return blocks;
}

/** The one block of `file` that contains `needle`. */
export function blockContaining(file: string, needle: string): DocsBlock {
  const found = typescriptBlocks(file).filter((block) => block.code.includes(needle));
  if (found.length !== 1) throw new Error(`${file} has ${found.length} TypeScript blocks containing '${needle}'`);
  return found[0];
}

/**
 * A temporary folder whose `node_modules` is the repository's, so TypeScript written there resolves packages as
 * the repository does (and Vitest loads the same module instances as the test itself).
 */
export function scratchProject(): { readonly dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'docs-blocks-'));
  symlinkSync(join(repositoryRoot, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Imports a documentation block as a module, through Vitest's transform (decorators and all). */
export async function importBlock<T>(block: DocsBlock, dir: string): Promise<T> {
  const path = join(dir, `block-${block.line}.ts`);
  writeFileSync(path, block.code);
  return (await import(/* @vite-ignore */ pathToFileURL(path).href)) as T;
}

/**
 * Type-checks `files` of the scratch folder `dir` with tsc, under the compiler options of an app made by the Nest CLI
 * (strict, ES modules) and `options` on top; writes its package.json and tsconfig.json. Returns tsc's output.
 */
export function typeCheckScratch(
  dir: string,
  files: readonly string[],
  options: Readonly<Record<string, unknown>>,
): Promise<string> {
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'es2022',
        lib: ['es2023'],
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        skipLibCheck: true,
        noEmit: true,
        ...options,
      },
      files,
    }),
  );
  return new Promise<string>((resolve) => {
    execFile(
      process.execPath,
      [join(repositoryRoot, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json', '--pretty', 'false'],
      { cwd: dir, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
      (_error, stdout, stderr) => resolve(stdout + stderr),
    );
  });
}
