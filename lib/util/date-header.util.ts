/**
 * Platform clock minus local clock from an HTTP `Date` header; `undefined` when absent or unparsable. The header has
 * whole-second resolution, so its mid-second is the best estimate of the platform's time.
 */
export function clockOffsetFromDateHeader(header: unknown, nowMs: number): number | undefined {
  const platformTime = typeof header === 'string' ? Date.parse(header) : Number.NaN;
  return Number.isNaN(platformTime) ? undefined : platformTime + 500 - nowMs;
}
