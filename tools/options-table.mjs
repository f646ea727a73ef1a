#!/usr/bin/env node
// Writes the options tables of docs/configuration.md from lib/options/options.table*.ts (through the build): machine
// authentication's between <!-- options-table --> and <!-- /options-table -->, user sign-in's between
// <!-- user-options-table --> and <!-- /user-options-table -->, then formats the file. test/architecture checks them.
//   npm run build && node tools/options-table.mjs
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const doc = `${root}docs/configuration.md`;
const { PLATFORM_AUTH_OPTIONS, optionTableCells } = await import(`${root}dist/options/options.table.js`);
const { PLATFORM_USER_AUTH_OPTIONS } = await import(`${root}dist/options/options.table.user.js`);

const header = ['option', 'environment variable', 'default', 'rule'];
function markdown(table) {
  const rows = [header, header.map(() => '---'), ...Object.keys(table).map((name) => optionTableCells(name, table))];
  return rows.map((cells) => `| ${cells.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`).join('\n');
}

let text = readFileSync(doc, 'utf8');
for (const [marker, table] of [
  ['options-table', PLATFORM_AUTH_OPTIONS],
  ['user-options-table', PLATFORM_USER_AUTH_OPTIONS],
]) {
  const block = new RegExp(`(<!-- ${marker} -->\\n)[\\s\\S]*?(<!-- /${marker} -->)`);
  if (!block.test(text)) throw new Error(`docs/configuration.md has no <!-- ${marker} --> block`);
  text = text.replace(block, `$1\n${markdown(table)}\n\n$2`);
  console.log(`options-table: ${Object.keys(table).length} options written to docs/configuration.md (${marker})`);
}
writeFileSync(doc, text);
execFileSync(process.execPath, [
  `${root}node_modules/prettier/bin/prettier.cjs`,
  '--write',
  '--log-level',
  'warn',
  doc,
]);
