import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';

export interface MachineInfo {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly platform: string;
  readonly uvThreadpoolSize: number;
}

export function describeMachine(): MachineInfo {
  return {
    cpuModel: cpuModelFromProc() ?? cpus()[0]?.model ?? 'unknown',
    cores: availableParallelism(),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    uvThreadpoolSize: Number(process.env.UV_THREADPOOL_SIZE ?? 4),
  };
}

function cpuModelFromProc(): string | undefined {
  try {
    return /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim();
  } catch {
    return undefined;
  }
}
