import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  repositoryRoot,
  scratchProject,
  typeCheckScratch,
  typescriptBlocks,
  type DocsBlock,
} from '../support/docs-blocks.js';

/** README.md and every page of docs/: what users read and copy from. */
const PAGES = [
  'README.md',
  ...readdirSync(join(repositoryRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];

/**
 * The app's own files that blocks import as an app would (`./secrets.module.js`): the one thing the pages leave to
 * the reader, stood in for by the smallest module of that shape.
 */
const APP_FILES: Readonly<Record<string, string>> = {
  'secrets.module.ts': [
    "import { Injectable, Module } from '@nestjs/common';",
    '@Injectable()',
    'export class SecretsService {',
    '  get(name: string): Promise<string> {',
    '    return Promise.resolve(name);',
    '  }',
    '}',
    '@Module({ providers: [SecretsService], exports: [SecretsService] })',
    'export class SecretsModule {}',
    '',
  ].join('\n'),
};

/**
 * Pages whose blocks do not compile yet and are being rewritten, blocks included, with the features they document.
 * Errors on these pages are expected until then; once a page compiles, this test fails until it is taken off.
 */
const PAGES_AWAITING_REWRITE: ReadonlySet<string> = new Set<string>();

interface BlockError {
  /** `docs/page.md:LINE`: the line of the page the error is on. */
  readonly at: string;
  readonly message: string;
}

/**
 * Each block is a module of its own in a scratch project that resolves `nestjs-platform-auth` (and its subpaths) to
 * lib/ and every other package to the repository's node_modules, with the compiler options of an app made by the
 * Nest CLI (strict, decorators). Vitest's globals stand in for Jest's, which the testing recipe also runs under.
 */
async function typeCheck(blocks: readonly DocsBlock[]): Promise<BlockError[]> {
  const scratch = scratchProject();
  try {
    const files = new Map<string, DocsBlock>();
    for (const block of blocks) {
      const name = `${block.file.replace(/[^A-Za-z0-9]+/g, '-')}-${block.line}.ts`;
      writeFileSync(join(scratch.dir, name), block.code);
      files.set(name, block);
    }
    for (const [name, code] of Object.entries(APP_FILES)) writeFileSync(join(scratch.dir, name), code);
    const lib = (path: string) => [join(repositoryRoot, 'lib', path)];
    const output = await typeCheckScratch(scratch.dir, [...Object.keys(APP_FILES), ...files.keys()], {
      moduleDetection: 'force',
      types: ['node', 'vitest/globals'],
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      paths: {
        'nestjs-platform-auth': lib('index.ts'),
        'nestjs-platform-auth/testing': lib('testing/index.ts'),
        'nestjs-platform-auth/testing/msw': lib('testing/msw/index.ts'),
        'nestjs-platform-auth/user': lib('user/index.ts'),
        'nestjs-platform-auth/terminus': lib('terminus/index.ts'),
        'nestjs-platform-auth/outbox': lib('outbox/index.ts'),
      },
    });
    const errors: BlockError[] = [];
    for (const line of output.split('\n')) {
      const match = /^(.+?\.ts)\((\d+),\d+\): error (TS\d+: .*)$/.exec(line.trim());
      if (!match) {
        if (line.trim()) errors.push({ at: 'tsc', message: line.trim() });
        continue;
      }
      const block = files.get(match[1]);
      // An error in lib/ itself would show here with its own path: report it as is.
      errors.push({
        at: block ? `${block.file}:${block.line + Number(match[2])}` : match[1],
        message: match[3],
      });
    }
    return errors;
  } finally {
    scratch.remove();
  }
}

describe('the TypeScript blocks of README.md and docs/', () => {
  const blocks = PAGES.flatMap((page) => typescriptBlocks(page));

  it('compile as they are written, each as a module of its own', async () => {
    const errors = await typeCheck(blocks.filter((block) => block.notCompiled === undefined));
    const pageOf = (error: BlockError) => error.at.replace(/:\d+$/, '');
    expect(errors.filter((error) => !PAGES_AWAITING_REWRITE.has(pageOf(error)))).toEqual([]);
    expect(new Set(errors.map(pageOf)), 'a page awaiting its rewrite compiles now: take it off the list').toEqual(
      PAGES_AWAITING_REWRITE,
    );
  }, 120_000);

  it('say why when they are not meant to compile', () => {
    for (const block of blocks.filter((b) => b.notCompiled !== undefined))
      expect(block.notCompiled, `${block.file}:${block.line}`).toMatch(/^\S.{10,}/);
  });
});
