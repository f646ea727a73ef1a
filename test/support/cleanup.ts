import { afterEach } from 'vitest';

export interface Closable {
  close(): Promise<unknown>;
}

/**
 * For a test file: `const track = useCleanup()` at the top level; `track(resource)` returns the resource and closes
 * it after the test, the last opened first (a fleet before the emulator it talks to).
 */
export function useCleanup(): <T extends Closable>(resource: T) => T {
  const open: Closable[] = [];
  afterEach(async () => {
    for (const resource of open.splice(0).reverse()) await resource.close();
  });
  return (resource) => {
    open.push(resource);
    return resource;
  };
}
