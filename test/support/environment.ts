/**
 * Puts `process.env` back as `saved` (a copy taken before) by changing it in place. Never `process.env = saved`:
 * that swaps Node's environment object for a plain one, so variables set afterwards (`SOFTHSM2_CONF`, say) no longer
 * reach native code in this worker, which other test files share.
 */
export function restoreEnv(saved: Record<string, string | undefined>): void {
  for (const name of Object.keys(process.env)) if (!Object.hasOwn(saved, name)) delete process.env[name];
  for (const [name, value] of Object.entries(saved)) if (value !== undefined) process.env[name] = value;
}
