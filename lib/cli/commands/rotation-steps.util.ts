import type { Output } from '../cli.output.js';

/**
 * The rotation runbook (docs/operations.md), from the pair keygen --next wrote: deploy it as the next pair, upload
 * it, watch status(), promote the files.
 */
export function rotationSteps(certificatePath: string): string[] {
  return [
    'Deploy the next pair beside the current one (every replica; the current pair stays in use until the portal step):',
    'Check both pairs: npx platform-auth doctor (the current pair is accepted, the next one is not registered yet).',
    `In the Administration Portal, replace the system integration's certificate with ${certificatePath}. The platform then refuses the current pair; each replica switches to the next pair within that exchange (at most one refused exchange per replica, no failed call). To rehearse this on the emulator: npx platform-auth emulator upload --certificate ${shellWord(certificatePath)} --state FILE (or --url URL).`,
    "Watch status(): credentials.thumbprint becomes the next pair's and credentials.switched is set (health shows credentialsSwitched).",
    'Promote the files: the next pair becomes the current pair (PLATFORM_PRIVATE_KEY_PATH, PLATFORM_CERTIFICATE_PATH), and PLATFORM_NEXT_* holds a new next pair or nothing.',
  ];
}

/**
 * keygen's numbered next steps, with the variables under the step that sets them: the first for a next pair (it is
 * deployed before anything else happens), the last ("Configure the application") for a first pair.
 */
export function printNextSteps(
  out: Output,
  steps: readonly string[],
  env: Readonly<Record<string, string>>,
  { next, checkNote = '' }: { readonly next: boolean; readonly checkNote?: string },
): void {
  const envStep = next ? 0 : steps.length - 1;
  out.print('Next steps:');
  steps.forEach((step, index) => {
    out.print(`  ${index + 1}. ${step}`);
    if (index !== envStep) return;
    for (const [name, value] of Object.entries(env)) {
      const isPath = /^PLATFORM_(NEXT_)?(PRIVATE_KEY_URI|PRIVATE_KEY_PATH|CERTIFICATE_PATH)$/.test(name);
      out.print(`       ${name}=${isPath ? shellWord(value) : value}`);
    }
  });
  out.print(
    `  ${steps.length + 1}. Check everything, including one real token exchange: npx platform-auth doctor${checkNote}`,
  );
}

/** A path as one shell word: quoted only when it needs to be. */
export function shellWord(path: string): string {
  return /^[\w./:@%+-]+$/.test(path) ? path : shellQuote(path);
}

/** Single quotes keep `\n` literal in shells and in dotenv files alike. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
