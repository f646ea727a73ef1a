import type { RegisteredUserClient, RegisterUserClientInput, TestUser } from './user-flow.types.js';

/** Two people to sign in as, until a test adds its own. */
const DEFAULT_TEST_USERS: readonly TestUser[] = [
  { id: 'user-alice', name: 'Alice Example', email: 'alice@example.test' },
  { id: 'user-bob', name: 'Bob Example', email: 'bob@example.test' },
];

/** Public clients and test users, as the platform's administrators would register them. */
export class UserDirectory {
  private readonly clients = new Map<string, RegisteredUserClient>();
  private readonly users = new Map<string, TestUser>(DEFAULT_TEST_USERS.map((user) => [user.id, { ...user }]));

  registerClient(input: RegisterUserClientInput): RegisteredUserClient {
    const clientId = input.clientId?.trim();
    if (!clientId) throw new Error('registerUserClient: clientId must not be empty');
    if (this.clients.has(clientId)) throw new Error(`registerUserClient: client '${clientId}' is already registered`);
    if (!Array.isArray(input.redirectUris) || input.redirectUris.length === 0)
      throw new Error('registerUserClient: give at least one redirect URI');
    for (const uri of input.redirectUris) checkRedirectUri(uri);
    const client: RegisteredUserClient = Object.freeze({
      clientId,
      redirectUris: Object.freeze([...input.redirectUris]),
      name: input.name ?? clientId,
    });
    this.clients.set(clientId, client);
    return client;
  }

  client(clientId: string | undefined): RegisteredUserClient | undefined {
    return clientId === undefined ? undefined : this.clients.get(clientId);
  }

  addUser(user: TestUser): void {
    if (!user.id?.trim()) throw new Error('addTestUser: id must not be empty');
    this.users.set(user.id, { ...user });
  }

  user(id: string | undefined): TestUser | undefined {
    return id === undefined ? undefined : this.users.get(id);
  }

  get allUsers(): TestUser[] {
    return [...this.users.values()].map((user) => ({ ...user }));
  }
}

/** RFC 6749 §3.1.2: absolute, no fragment. Plain http is allowed here, since the emulator is a loopback tool. */
function checkRedirectUri(uri: string): void {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new Error(`registerUserClient: redirect URI '${uri}' is not an absolute URL`);
  }
  if (url.hash || uri.includes('#')) throw new Error(`registerUserClient: redirect URI '${uri}' has a fragment`);
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new Error(`registerUserClient: redirect URI '${uri}' must use http: or https:`);
}
