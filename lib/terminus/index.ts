// The `nestjs-platform-auth/terminus` entry point; needs the optional peer `@nestjs/terminus`.
export { PlatformAuthHealthIndicator, type PlatformAuthHealthOptions } from './health.indicator.js';
