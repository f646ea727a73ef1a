#!/usr/bin/env node
// Writes the options tables of the docs from lib/options/options.table*.ts (through the build): in
// docs/configuration.md machine authentication's between <!-- options-table --> and <!-- /options-table -->, user
// sign-in's between <!-- user-options-table --> and <!-- /user-options-table -->; then formats the file.
// test/architecture checks them. The outbox's variables table (docs/outbox.md) is the outbox's own: its docs test
// checks it against lib/outbox.
//   npm run build && node tools/options-table.mjs
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const { PLATFORM_AUTH_OPTIONS, optionTableCells } = await import(`${root}dist/options/options.table.js`);
const { PLATFORM_USER_AUTH_OPTIONS } = await import(`${root}dist/options/options.table.user.js`);

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
