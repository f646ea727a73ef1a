/**
 * The rotation runbook (docs/operations.md), from the pair keygen --next wrote: deploy it as the next pair, upload
 * it, watch status(), promote the files.
 */
export function rotationSteps(certificatePath: string): string[] {
  return [
    'Deploy the next pair beside the current one (every replica; the current pair stays in use until the portal step):',
    'Check both pairs: npx platform-auth doctor (the current pair is accepted, the next one is not registered yet).',
    `In the Administration Portal, replace the system integration's certificate with ${certificatePath}. The platform then refuses the current pair; each replica switches to the next pair within that exchange (at most one refused exchange per replica, no failed call).`,
    "Watch status(): credentials.thumbprint becomes the next pair's and credentials.switched is set (health shows credentialsSwitched).",
    'Promote the files: the next pair becomes the current pair (PLATFORM_PRIVATE_KEY_PATH, PLATFORM_CERTIFICATE_PATH), and PLATFORM_NEXT_* holds a new next pair or nothing.',
  ];
}
