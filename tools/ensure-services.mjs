#!/usr/bin/env node
// Makes sure the real services the tests use are on this machine, installing Debian's packages when one is missing,
// and says what it did. Run by `npm test` (and so by .ci/run) before any test: tests never skip for a missing service.
//   node tools/ensure-services.mjs            all services
//   node tools/ensure-services.mjs redis      only the named ones
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';

/** Debian installs each PostgreSQL major version's server under its own folder, off the PATH. */
function postgresBinaries() {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return [];
  return readdirSync(root).map((version) => `${root}/${version}/bin/postgres`);
}

const SERVICES = {
  redis: { what: 'redis-server', binary: 'redis-server', candidates: ['/usr/bin/redis-server'], apt: ['redis-server'] },
  // redis-cli --cluster create makes the store's Redis Cluster; Debian's redis-server usually brings it along.
  'redis-tools': { what: 'redis-cli', binary: 'redis-cli', candidates: ['/usr/bin/redis-cli'], apt: ['redis-tools'] },
  chromium: { what: 'Chromium', binary: 'chromium', candidates: ['/usr/bin/chromium'], apt: ['chromium'] },
  // The PKCS#11 token the key-custody tests create keys in (its library and softhsm2-util), and opensc's pkcs11-tool
  // that checks the keys from outside the library.
  softhsm: {
    what: 'SoftHSM2',
    binary: 'softhsm2-util',
    candidates: ['/usr/lib/softhsm/libsofthsm2.so'],
    apt: ['softhsm2'],
  },
  opensc: {
    what: "opensc's pkcs11-tool",
    binary: 'pkcs11-tool',
    candidates: ['/usr/bin/pkcs11-tool'],
    apt: ['opensc'],
  },
  // The Postgres outbox's real-server, concurrency and crash tests: each file runs initdb and a server of its own.
  postgresql: { what: 'PostgreSQL', binary: 'postgres', candidates: postgresBinaries, apt: ['postgresql'] },
};

function find(service) {
  const candidates = typeof service.candidates === 'function' ? service.candidates() : service.candidates;
  for (const path of candidates) if (existsSync(path)) return path;
  const which = spawnSync('sh', ['-c', `command -v ${service.binary}`], { encoding: 'utf8' });
  return which.status === 0 ? which.stdout.trim() : undefined;
}

let updated = false;
function aptInstall(packages) {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const sudo = process.getuid?.() === 0 ? [] : ['sudo'];
  const run = (args) => execFileSync(sudo[0] ?? args[0], sudo.length ? args : args.slice(1), { stdio: 'inherit', env });
  if (!updated) {
    run(['apt-get', 'update', '-qq']);
    updated = true;
  }
  run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...packages]);
}

const wanted = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(SERVICES);
for (const name of wanted) {
  const service = SERVICES[name];
  if (!service)
    throw new Error(`ensure-services: unknown service '${name}' (known: ${Object.keys(SERVICES).join(', ')})`);
  const found = find(service);
  if (found) {
    console.log(`ensure-services: ${service.what} found at ${found}`);
    continue;
  }
  console.log(`ensure-services: ${service.what} missing; installing Debian package(s) ${service.apt.join(' ')}`);
  aptInstall(service.apt);
  const installed = find(service);
  if (!installed) throw new Error(`ensure-services: ${service.what} is still missing after apt-get install`);
  console.log(`ensure-services: ${service.what} installed at ${installed}`);
}
