export type { TokenStore, TokenStoreEntry } from '../options/token-store.interface.js';
