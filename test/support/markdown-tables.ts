import { readFileSync } from 'node:fs';
import { repositoryRoot } from './docs-blocks.js';

/**
 * The rows of every Markdown table in one section of docs/operations.md (from the heading `from` up to `to`, or to
 * the end), by each table's first header cell: what the telemetry tests compare with what the code emits.
 */
export function operationsTables(from: string, to?: string): Map<string, string[][]> {
  const page = readFileSync(`${repositoryRoot}/docs/operations.md`, 'utf8');
  const section = page.slice(page.indexOf(from), to === undefined ? undefined : page.indexOf(to));
  const tables = new Map<string, string[][]>();
  let rows: string[][] | undefined;
  for (const line of section.split('\n')) {
    if (!line.startsWith('|')) {
      rows = undefined;
      continue;
    }
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    if (/^-+$/.test(cells[0])) continue;
    if (!rows) tables.set(cells[0], (rows = []));
    else rows.push(cells);
  }
  return tables;
}

/** The code spans of a table cell. */
export const codeIn = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]);
