#!/usr/bin/env node
// Writes the options tables of the docs from lib/options/options.table*.ts (through the build): in
// docs/configuration.md machine authentication's between <!-- options-table --> and <!-- /options-table -->, user
// sign-in's between <!-- user-options-table --> and <!-- /user-options-table -->; in docs/outbox.md the outbox's
// variables between <!-- outbox-variables-table --> and <!-- /outbox-variables-table -->; then formats the files.
// test/architecture checks them.
//   npm run build && node tools/options-table.mjs
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const { PLATFORM_AUTH_OPTIONS, optionTableCells } = await import(`${root}dist/options/options.table.js`);
const { PLATFORM_USER_AUTH_OPTIONS } = await import(`${root}dist/options/options.table.user.js`);
const { PLATFORM_OUTBOX_OPTIONS } = await import(`${root}dist/options/options.table.outbox.js`);

const header = ['option', 'environment variable', 'default', 'rule'];
function markdown(table) {
  const rows = [header, header.map(() => '---'), ...Object.keys(table).map((name) => optionTableCells(name, table))];
  return rows.map((cells) => `| ${cells.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`).join('\n');
}

for (const [file, tables] of [
  [
    'docs/configuration.md',
    [
      ['options-table', PLATFORM_AUTH_OPTIONS],
      ['user-options-table', PLATFORM_USER_AUTH_OPTIONS],
    ],
  ],
  ['docs/outbox.md', [['outbox-variables-table', PLATFORM_OUTBOX_OPTIONS]]],
]) {
  const doc = `${root}${file}`;
  let text = readFileSync(doc, 'utf8');
  for (const [marker, table] of tables) {
    const block = new RegExp(`(<!-- ${marker} -->\\n)[\\s\\S]*?(<!-- /${marker} -->)`);
    if (!block.test(text)) throw new Error(`${file} has no <!-- ${marker} --> block`);
    text = text.replace(block, `$1\n${markdown(table)}\n\n$2`);
    console.log(`options-table: ${Object.keys(table).length} options written to ${file} (${marker})`);
  }
  writeFileSync(doc, text);
  execFileSync(process.execPath, [
    `${root}node_modules/prettier/bin/prettier.cjs`,
    '--write',
    '--log-level',
    'warn',
    doc,
  ]);
}
