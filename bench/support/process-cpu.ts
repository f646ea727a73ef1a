import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on every Linux Node supports). */
const TICKS_PER_SECOND = 100;

/**
 * CPU time (user + system) another process has used so far, in µs, from /proc (Linux only; `undefined` elsewhere):
 * the redis-server and the platform's process, whose work a queue's throughput pays for as much as this process's.
 */
export function processCpuUs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}
