import { vi } from 'vitest';

/** Runs `action` with stdout and stderr captured (Nest's ConsoleLogger writes to both); returns what was written. */
export async function captureOutput(action: () => unknown): Promise<string> {
  const written: string[] = [];
  const capture = (chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  };
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  try {
    await action();
  } finally {
    stderr.mockRestore();
    stdout.mockRestore();
  }
  return written.join('');
}
