import { randomUUID, X509Certificate, type KeyObject } from 'node:crypto';
import { certificateThumbprint } from '../../credentials/thumbprint.util.js';
import type { ThumbprintAlgorithm } from '../../options/platform-auth-options.interface.js';
import type { IntegrationPermission, RegisteredIntegration, RegisterIntegrationInput } from './emulator.types.js';
import { checkRateLimit } from './emulator.rate-limit.js';

export const ALL_PERMISSIONS: readonly IntegrationPermission[] = ['Send message', 'Retrieve billing data'];
export const ACTIVE_STATUS = 'Active';

interface RegistryEntry {
  readonly integration: RegisteredIntegration;
  /** The certificate's public key, parsed once at registration: what the token endpoint verifies signatures with. */
  readonly publicKey: KeyObject;
  readonly validFrom: Date;
  readonly validTo: Date;
}

/** The emulator's Administration Portal: system integrations, found by thumbprint (`iss`) or machineId (`sub`). */
export class IntegrationRegistry {
  private readonly byThumbprint = new Map<string, RegistryEntry>();
  private readonly byMachineId = new Map<string, RegistryEntry>();

  constructor(readonly thumbprintAlgorithm: ThumbprintAlgorithm) {}

  register(input: RegisterIntegrationInput): RegisteredIntegration {
    return this.registerAll([input], 'registerIntegration')[0];
  }

  /**
   * Registers every input or none: each is checked (certificate, permissions, a thumbprint or machineId already
   * registered or given twice in the batch) before any is added, so a bad row leaves the registry as it was.
   */
  registerAll(inputs: readonly RegisterIntegrationInput[], operation: string): RegisteredIntegration[] {
    const thumbprints = new Set<string>();
    const machineIds = new Set<string>();
    const entries = inputs.map((input, index) => {
      const where = inputs.length === 1 ? operation : `${operation}[${index}]`;
      const certificate = parseRsaCertificate(input.certificatePem, where);
      const thumbprint = certificateThumbprint(certificate, this.thumbprintAlgorithm);
      if (this.byThumbprint.has(thumbprint) || thumbprints.has(thumbprint)) {
        throw new Error(
          `${where}: a system integration with certificate thumbprint ${thumbprint} is already registered`,
        );
      }
      const machineId = input.machineId ?? randomUUID();
      if (this.byMachineId.has(machineId) || machineIds.has(machineId)) {
        throw new Error(`${where}: machineId '${machineId}' is already registered`);
      }
      thumbprints.add(thumbprint);
      machineIds.add(machineId);
      const integration: RegisteredIntegration = {
        machineId,
        thumbprint,
        name: input.name ?? `Emulated integration ${this.byMachineId.size + index + 1}`,
        status: input.status ?? ACTIVE_STATUS,
        permissions: checkedPermissions(input.permissions ?? [...ALL_PERMISSIONS]),
      };
      const rateLimit = checkRateLimit(input.rateLimit, where);
      if (rateLimit) integration.rateLimit = rateLimit;
      return registryEntry(integration, certificate);
    });
    for (const entry of entries) {
      this.byThumbprint.set(entry.integration.thumbprint, entry);
      this.byMachineId.set(entry.integration.machineId, entry);
    }
    return entries.map((entry) => entry.integration);
  }

  /** The integration whose thumbprint is `iss`, ignoring case as the portal's display does. */
  findByIssuer(iss: string): RegistryEntry | undefined {
    return this.byThumbprint.get(iss.toUpperCase());
  }

  /** Every registered integration, in registration order. */
  entries(): RegistryEntry[] {
    return [...this.byMachineId.values()];
  }

  has(machineId: string): boolean {
    return this.byMachineId.has(machineId);
  }

  get(machineId: string): RegisteredIntegration {
    const entry = this.byMachineId.get(machineId);
    if (!entry) throw new Error(`no system integration with machineId '${machineId}' is registered`);
    return entry.integration;
  }

  /**
   * Uploads a new certificate for an integration, as the portal allows at configuration. One certificate per
   * integration: the old one stops authenticating at once.
   */
  replaceCertificate(machineId: string, certificatePem: string): RegisteredIntegration {
    const entry = this.byMachineId.get(machineId);
    if (!entry) throw new Error(`no system integration with machineId '${machineId}' is registered`);
    const certificate = parseRsaCertificate(certificatePem, 'replaceCertificate');
    const thumbprint = certificateThumbprint(certificate, this.thumbprintAlgorithm);
    const owner = this.byThumbprint.get(thumbprint);
    if (owner && owner !== entry) {
      throw new Error(`replaceCertificate: thumbprint ${thumbprint} is registered on another integration`);
    }
    this.byThumbprint.delete(entry.integration.thumbprint);
    // Readonly to users; the registry owns the live object and keeps it, so handles to it see the new thumbprint.
    (entry.integration as { thumbprint: string }).thumbprint = thumbprint;
    const replaced = registryEntry(entry.integration, certificate);
    this.byThumbprint.set(thumbprint, replaced);
    this.byMachineId.set(machineId, replaced);
    return entry.integration;
  }

  setStatus(machineId: string, status: string): void {
    this.get(machineId).status = status;
  }

  setPermissions(machineId: string, permissions: IntegrationPermission[]): void {
    this.get(machineId).permissions = checkedPermissions(permissions);
  }
}

function registryEntry(integration: RegisteredIntegration, certificate: X509Certificate): RegistryEntry {
  return {
    integration,
    publicKey: certificate.publicKey,
    validFrom: new Date(certificate.validFrom),
    validTo: new Date(certificate.validTo),
  };
}

/** What the portal accepts: an X.509 certificate with an RSA key, the only kind RS256 assertions verify against. */
function parseRsaCertificate(pem: string, operation: string): X509Certificate {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pem);
  } catch {
    throw new Error(`${operation}: certificatePem is not a PEM X.509 certificate`);
  }
  if (certificate.publicKey.asymmetricKeyType !== 'rsa') {
    throw new Error(
      `${operation}: the certificate holds a ${certificate.publicKey.asymmetricKeyType} key; the platform verifies RS256, which needs RSA`,
    );
  }
  return certificate;
}

/** Copied, so later changes to the caller's array do not silently change the registry. */
function checkedPermissions(permissions: readonly IntegrationPermission[]): IntegrationPermission[] {
  const unknown = permissions.filter((permission) => !ALL_PERMISSIONS.includes(permission));
  if (unknown.length > 0) {
    throw new Error(
      `unknown permission(s) ${unknown.map((p) => `'${p}'`).join(', ')}; allowed: ${ALL_PERMISSIONS.map((p) => `'${p}'`).join(', ')}`,
    );
  }
  return [...new Set(permissions)];
}
