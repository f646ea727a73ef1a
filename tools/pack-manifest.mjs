// The package.json that `npm pack` and `npm publish` put in the tarball carries no `prepare` script.
//
// npm 11 warns about every package installed from a tarball whose manifest has `prepare` ("install scripts not yet
// covered by allowScripts"), though it runs `prepare` only in a folder or a git checkout, never for a tarball: a user
// of the tarball was told to review a script that does not run. `prepack` (npm pack and npm publish, in this folder
// only) builds, then calls `strip`, which keeps package.json beside it and writes it without `prepare`; npm reads
// the manifest and the files after `prepack`, so it neither runs `prepare` again nor packs it; `postpack` calls
// `restore`. A git install runs neither: npm clones, installs the dev dependencies and runs `prepare`, which builds.
//
//   node tools/pack-manifest.mjs strip | restore
import { copyFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const manifest = fileURLToPath(new URL('../package.json', import.meta.url));
const kept = fileURLToPath(new URL('../.package.json.packing', import.meta.url));

function restore() {
  if (existsSync(kept)) renameSync(kept, manifest);
}

function strip() {
  // A pack that failed after `strip` left the full manifest beside the stripped one: that one is the real one.
  restore();
  copyFileSync(manifest, kept);
  const packed = JSON.parse(readFileSync(manifest, 'utf8'));
  delete packed.scripts.prepare;
  writeFileSync(manifest, `${JSON.stringify(packed, null, 2)}\n`);
}

const step = process.argv[2];
if (step === 'strip') strip();
else if (step === 'restore') restore();
else {
  console.error(`usage: node tools/pack-manifest.mjs strip | restore (got ${step ?? 'nothing'})`);
  process.exitCode = 2;
}
