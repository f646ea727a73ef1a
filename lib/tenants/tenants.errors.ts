// The tenant errors are leaf-layer errors, so the exception filter (http) can answer them; tenants import them here.
export * from '../platform-auth.tenant-errors.js';
