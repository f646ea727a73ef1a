import { describe, expect, it } from 'vitest';
import { ExpiringMap } from '../../lib/testing/emulator/emulator.expiring-map.js';

describe('ExpiringMap (replay cache and issued tokens)', () => {
  it('keeps memory proportional to live entries however many expire', () => {
    let now = 0;
    const map = new ExpiringMap<{ expiresAt: number }>(() => now);
    for (let i = 0; i < 100_000; i += 1) {
      now += 10;
      map.set(`key-${i}`, { expiresAt: now + 1_000 });
    }
    // 100 entries are live at any time; expired ones are swept whenever the map doubles past 1024.
    expect(map.size).toBeLessThanOrEqual(2 * 1024);
    expect(map.get('key-99999')).toBeDefined();
    expect(map.get('key-0')).toBeUndefined();
  });

  it('keeps entries that have not expired, however many there are', () => {
    const map = new ExpiringMap<{ expiresAt: number }>(() => 0);
    for (let i = 0; i < 5_000; i += 1) map.set(`key-${i}`, { expiresAt: 1 });
    expect(map.size).toBe(5_000);
  });
});
