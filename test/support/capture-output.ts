import { vi } from 'vitest';

function startCapture(): { written: string[]; stop(): void } {
  const written: string[] = [];
  const capture = (chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  };
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  return {
    written,
    stop() {
      stderr.mockRestore();
      stdout.mockRestore();
    },
  };
}

/** Runs `action` with stdout and stderr captured (Nest's ConsoleLogger writes to both); returns what was written. */
export async function captureOutput(action: () => unknown): Promise<string> {
  const capture = startCapture();
  try {
    await action();
  } finally {
    capture.stop();
  }
  return capture.written.join('');
}

/** `captureOutput` for synchronous work. */
export function captureOutputSync(action: () => void): string {
  const capture = startCapture();
  try {
    action();
  } finally {
    capture.stop();
  }
  return capture.written.join('');
}
