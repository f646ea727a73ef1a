export { createPlatformHandlers, type PlatformHandlersOptions } from './platform.handlers.js';
