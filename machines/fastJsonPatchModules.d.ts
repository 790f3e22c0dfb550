// Types for the ES module files of fast-json-patch, which ship `.d.ts` files beside them
// under names TypeScript does not look for when the import ends in `.mjs`.
declare module 'fast-json-patch/module/core.mjs' {
  export { applyOperation } from 'fast-json-patch';
}

declare module 'fast-json-patch/module/helpers.mjs' {
  export { unescapePathComponent } from 'fast-json-patch';
}
