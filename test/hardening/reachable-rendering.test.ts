import { inspect } from 'node:util';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { expect, it } from 'vitest';
import { PlatformUserAuthModule } from 'nestjs-platform-auth/user';
import { renderReachable } from '../support/reachable-rendering.js';

const PLANTED = 'pV8rQ2mZt6Lw1Xc9Hb4Ny7Ks3Fd5Ja0Ge';

/** A provider that hides a secret where only a deep dump finds it: a hidden property, and bytes in a map. */
@Injectable()
class Holder {
  readonly deep = new Map([['key', { list: [{ bytes: Buffer.from('0123456789abcdef0123', 'hex') }] }]]);
  constructor() {
    Object.defineProperty(this, 'hidden', { value: { inner: { secret: PLANTED } }, enumerable: false });
  }
}

it('the secrets sweeps’ rendering of a container shows every string inspect shows, planted secrets included', async () => {
  const moduleRef = await Test.createTestingModule({
    imports: [
      PlatformUserAuthModule.forRoot({
        baseUrl: 'https://platform.example.com',
        clientId: 'web-app',
        redirectUri: 'https://app.example.com/callback',
        stateSecret: 'uP4g0cF8vJm2Qx7Rz1Kd9Wn3Ys6Tb5Ha',
      }),
    ],
    providers: [Holder],
  }).compile();
  try {
    const once = renderReachable(moduleRef, 12);
    const full = inspect(moduleRef, { depth: 12, showHidden: true });
    // Nest keeps provider instances in WeakMaps, which only showHidden shows.
    for (const planted of [PLANTED, '01 23 45 67 89 ab cd ef']) {
      expect(full).toContain(planted);
      expect(once).toContain(planted);
    }
    const strings = new Set([...full.matchAll(/'([^'\n]+)'/g)].map((match) => match[1]));
    expect(strings.size).toBeGreaterThan(100);
    expect([...strings].filter((text) => !once.includes(text))).toEqual([]);
    // The hook it lends every object is gone afterwards.
    expect(Object.hasOwn(Object.prototype, inspect.custom)).toBe(false);
  } finally {
    await moduleRef.close();
  }
});
