export {
  createPlatformHandlers,
  type PlatformHandlersEmulator,
  type PlatformHandlersOptions,
} from './platform.handlers.js';
