// Types for the ES module files of fast-json-patch, which ship `.d.ts` files beside them
// under names TypeScript does not look for when the import ends in `.mjs`. The library does
// not use the package: its test checks `applyJsonPatchOperation` against it.
declare module 'fast-json-patch/module/core.mjs' {
  export { applyOperation } from 'fast-json-patch';
}
