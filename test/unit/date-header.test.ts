import { describe, expect, it } from 'vitest';
import { clockOffsetFromDateHeader } from '../../lib/util/date-header.util.js';

describe('clockOffsetFromDateHeader', () => {
  const now = Date.UTC(2026, 10, 23, 12, 0, 0, 250);

  it("is the platform's time minus the local time, taking the header's mid-second", () => {
    expect(clockOffsetFromDateHeader('Mon, 23 Nov 2026 12:01:30 GMT', now)).toBe(90_250);
    expect(clockOffsetFromDateHeader('Mon, 23 Nov 2026 11:59:00 GMT', now)).toBe(-59_750);
  });

  it('is undefined without a usable header', () => {
    expect(clockOffsetFromDateHeader(undefined, now)).toBeUndefined();
    expect(clockOffsetFromDateHeader('yesterday-ish', now)).toBeUndefined();
    expect(clockOffsetFromDateHeader(['Mon, 23 Nov 2026 12:01:30 GMT'], now)).toBeUndefined();
  });
});
