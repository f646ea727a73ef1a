import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest, longest first: each waits mostly on other processes (npm installs, Redis clusters,
 * the sample app), so starting them first lets the rest of the suite run beside them instead of after them. Vitest
 * orders a fresh clone by file size, which started the 3-minute compatibility file half-way through the run. The
 * compatibility file makes the run's one `npm pack`; the other packaging files come after the next few, so that they
 * find the tarball made instead of holding workers while they wait for it.
 */
const SLOW_FIRST = [
  'test/packaging/compatibility.test.ts',
  'test/rotation/soak-quick.test.ts',
  'test/store/shared-store.test.ts',
  'test/store/redis-cluster.test.ts',
  'test/e2e/sample-app.e2e.test.ts',
  'test/store/redis-sentinel.test.ts',
  // The longest of `npm run test:fast` after those: a run of it measured them last in the queue.
  'test/conformance/bearer.conformance.test.ts',
  'test/architecture/api-report.test.ts',
  'test/operations/telemetry-setup.test.ts',
  'test/packaging/tarball.test.ts',
  'test/packaging/packaging.test.ts',
  'test/packaging/install-without-otel.test.ts',
];

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification): number => {
      const index = SLOW_FIRST.findIndex((path) => file.moduleId.replaceAll('\\', '/').endsWith(path));
      return index < 0 ? SLOW_FIRST.length : index;
    };
    // Array.prototype.sort is stable: the other files keep the order Vitest chose.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
