import type { MachineInfo } from './machine.js';
import type { Spread } from './stats.js';

/** Across rounds: the full range, or the interquartile range where rounds are many and outliers expected. */
export interface RoundSpread extends Spread {
  readonly kind?: 'range' | 'iqr';
}

/** `FAILED` comes only from count targets: those are correctness, and fail the run. */
export type Status = 'met' | 'MISSED' | 'FAILED' | 'info';

export interface Figure {
  readonly id: string;
  readonly label: string;
  readonly value: number;
  readonly display: string;
  readonly baseline: string;
  readonly target: string;
  readonly status: Status;
  readonly spread?: RoundSpread;
}

interface RatioOptions {
  readonly baseline: string;
  readonly spread?: RoundSpread;
  readonly goal?: number;
}

function formatRatio(value: number): string {
  return `${value.toFixed(3)}×`;
}

function formatSpread(spread: RoundSpread | undefined, digits: number): string {
  if (!spread) return '';
  return `${spread.min.toFixed(digits)}–${spread.max.toFixed(digits)}${spread.kind === 'iqr' ? ' (IQR)' : ''}`;
}

export class Report {
  readonly figures: Figure[] = [];
  readonly details: Record<string, unknown> = {};

  /** A ratio that must stay at or below `limit`; a miss is reported, not fatal (timings vary between machines). */
  atMost(id: string, label: string, value: number, limit: number, options: RatioOptions): void {
    const goal = options.goal === undefined ? '' : ` (goal ≤ ${options.goal})`;
    this.ratio(id, label, value, options, `≤ ${limit}${goal}`, value <= limit);
  }

  atLeast(id: string, label: string, value: number, limit: number, options: RatioOptions): void {
    this.ratio(id, label, value, options, `≥ ${limit}`, value >= limit);
  }

  private ratio(id: string, label: string, value: number, options: RatioOptions, target: string, met: boolean): void {
    this.figures.push({
      id,
      label,
      value,
      display: formatRatio(value),
      baseline: options.baseline,
      target,
      status: met ? 'met' : 'MISSED',
      spread: options.spread,
    });
  }

  /** A value with an absolute ceiling (ns, MB): reported, not fatal, like the ratios. */
  below(
    id: string,
    label: string,
    value: number,
    limit: number,
    unit: string,
    baseline: string,
    spread?: RoundSpread,
  ): void {
    this.figures.push({
      id,
      label,
      value,
      display: `${formatNumber(value)} ${unit}`,
      baseline,
      target: `< ${formatNumber(limit)} ${unit}`,
      status: value < limit ? 'met' : 'MISSED',
      spread,
    });
  }

  /** A count that must be exact: a miss is a correctness bug and fails the run. */
  exactly(id: string, label: string, value: number, expected: number, baseline: string): void {
    this.figures.push({
      id,
      label,
      value,
      display: formatNumber(value),
      baseline,
      target: `= ${formatNumber(expected)}`,
      status: value === expected ? 'met' : 'FAILED',
    });
  }

  /** A count with a ceiling that is correctness (a limit the library promises): over it fails the run. */
  noMoreThan(id: string, label: string, value: number, limit: number, baseline: string): void {
    this.figures.push({
      id,
      label,
      value,
      display: formatNumber(value),
      baseline,
      target: `≤ ${formatNumber(limit)}`,
      status: value <= limit ? 'met' : 'FAILED',
    });
  }

  info(id: string, label: string, value: number, display: string, baseline: string, spread?: RoundSpread): void {
    this.figures.push({ id, label, value, display, baseline, target: '—', status: 'info', spread });
  }

  detail(key: string, value: unknown): void {
    this.details[key] = value;
  }

  get failures(): Figure[] {
    return this.figures.filter((figure) => figure.status === 'FAILED');
  }

  get misses(): Figure[] {
    return this.figures.filter((figure) => figure.status === 'MISSED');
  }

  toMarkdown(): string {
    const rows = this.figures.map((f) => {
      const digits = f.display.endsWith('×') ? f.display.length - f.display.indexOf('.') - 2 : 0;
      return `| ${f.label} | ${f.display} | ${formatSpread(f.spread, digits)} | ${f.baseline} | ${f.target} | ${f.status} |`;
    });
    return [
      '| figure | value | spread across rounds | against | target | status |',
      '|---|---|---|---|---|---|',
      ...rows,
    ].join('\n');
  }

  toJson(machine: MachineInfo, startedAt: Date, durationSeconds: number): string {
    return `${JSON.stringify({ machine, startedAt: startedAt.toISOString(), durationSeconds, figures: this.figures, details: this.details }, null, 2)}\n`;
  }
}

export function formatNumber(value: number): string {
  if (Number.isInteger(value)) return value.toLocaleString('en-US');
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  return value.toFixed(2);
}

export function progress(message: string): void {
  process.stdout.write(`  · ${message}\n`);
}
