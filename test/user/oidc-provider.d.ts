// The part of oidc-provider 9 (which ships no type declarations) the tests use.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export type ClientMetadata = Record<string, unknown> & { client_id: string };

  export interface Configuration {
    clients?: ClientMetadata[];
    [key: string]: unknown;
  }

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: string, listener: (...args: unknown[]) => void): this;
    proxy: boolean;
  }
}

// The package's one AsyncLocalStorage, which each request runs in (lib/helpers/als.js).
declare module 'oidc-provider/lib/helpers/als.js' {
  import type { AsyncLocalStorage } from 'node:async_hooks';

  const context: AsyncLocalStorage<unknown>;
  export default context;
}
