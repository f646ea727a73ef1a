/**
 * PEM text as it arrives from files and environment variables: env values often carry literal `\n` sequences
 * (one line in a `.env` file or a CI secret) and CRLF line ends. Both are turned into plain `\n`.
 */
export function normalizePem(text: string): string {
  return text
    .replace(/\\r\\n|\\n/g, '\n')
    .replace(/\r\n?/g, '\n')
    .trim();
}

type PemKind =
  | 'private-key'
  | 'encrypted-private-key'
  | 'rsa-private-key'
  | 'ec-private-key'
  | 'openssh-private-key'
  | 'public-key'
  | 'certificate'
  | 'other';

const LABEL_KINDS: Record<string, PemKind> = {
  'PRIVATE KEY': 'private-key',
  'ENCRYPTED PRIVATE KEY': 'encrypted-private-key',
  'RSA PRIVATE KEY': 'rsa-private-key',
  'EC PRIVATE KEY': 'ec-private-key',
  'OPENSSH PRIVATE KEY': 'openssh-private-key',
  'PUBLIC KEY': 'public-key',
  'RSA PUBLIC KEY': 'public-key',
  CERTIFICATE: 'certificate',
  'TRUSTED CERTIFICATE': 'certificate',
};

/** The kinds of the PEM blocks in `text`, in order, read from their `-----BEGIN …-----` labels only. */
export function pemBlockKinds(text: string): PemKind[] {
  const kinds: PemKind[] = [];
  for (const match of text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----/g)) {
    kinds.push(LABEL_KINDS[match[1]] ?? 'other');
  }
  return kinds;
}

/** A legacy (PKCS#1) PEM encrypted with `Proc-Type: 4,ENCRYPTED` headers. */
export function isLegacyEncryptedPem(text: string): boolean {
  return /^Proc-Type:\s*4,ENCRYPTED/m.test(text);
}
