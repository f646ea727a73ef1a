#!/usr/bin/env -S node --
// The '--' ends Node's own options: Node 20 would otherwise take '--env-file FILE' anywhere on the command line as
// its own flag and exit 9 when FILE is missing, before this program could parse it.
// First, before anything that loads the library: its Nest-decorated classes record metadata through it.
import 'reflect-metadata';
import { toReaderThatMayLeave } from './cli.output.js';
import { runCli } from './cli.program.js';

function untilStopped(): Promise<string> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

// The exit code is set rather than forced with process.exit(), which could cut off output still flowing into a pipe.
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: toReaderThatMayLeave(process.stdout),
  stderr: toReaderThatMayLeave(process.stderr),
  env: process.env,
  cwd: process.cwd(),
  untilStopped,
});
