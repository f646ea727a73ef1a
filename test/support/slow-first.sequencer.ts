import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest, longest first: each waits mostly on other processes (npm installs, Redis clusters,
 * the sample app), so starting them first lets the rest of the suite run beside them instead of after them. Vitest
 * orders a fresh clone by file size, which started the 3-minute compatibility file half-way through the run.
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
];

/**
 * The compatibility file makes the run's one `npm pack`; these come after the other files that have a process of
 * their own, so that they find the tarball made instead of holding workers while they wait for it.
 */
const AFTER_THE_PACK = [
  'test/packaging/tarball.test.ts',
  'test/packaging/packaging.test.ts',
  'test/packaging/install-without-otel.test.ts',
];

/**
 * The files of projects that give each file a process of its own come before those of the project whose files share
 * their workers (`isolate: false`). Vitest keeps a shared worker for the next file only when the next file in its
 * queue is of the same project: with the projects' files mixed, a file of another project next in the queue ended
 * the worker, and its successor loaded Nest, axios and the library again (8–10 s of CPU; 7 shared workers in a run
 * of `test:fast` where 4 do).
 */
const sharesWorkers = (file: TestSpecification): boolean => file.project.config.isolate === false;

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const indexIn = (list: string[], file: TestSpecification): number =>
      list.findIndex((path) => file.moduleId.replaceAll('\\', '/').endsWith(path));
    const rank = (file: TestSpecification): number => {
      const slow = indexIn(SLOW_FIRST, file);
      const afterPack = indexIn(AFTER_THE_PACK, file);
      const withinProject = slow >= 0 ? slow : afterPack >= 0 ? 200 + afterPack : 100;
      return (sharesWorkers(file) ? 1_000 : 0) + withinProject;
    };
    // Array.prototype.sort is stable: the other files keep the order Vitest chose.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
