import { Injectable } from '@nestjs/common';
import { describe, expect, it } from 'vitest';

class Dependency {}
@Injectable()
class NeedsDependency {
  constructor(readonly dependency: Dependency) {}
}

describe('test transform', () => {
  it('emits constructor parameter metadata for Nest injection', () => {
    expect(Reflect.getMetadata('design:paramtypes', NeedsDependency)).toEqual([Dependency]);
  });
});
