// Stands in for `import.meta.url` in the CommonJS build (see build-cjs.mjs): the URL of the file it is inlined into.
export const importMetaUrl = require('node:url').pathToFileURL(__filename).href;
