/** wawoff2 ships no types: its decoder of WOFF2 files (Google's woff2, as WebAssembly). */
declare module "wawoff2/decompress.js" {
  /** The TrueType/OpenType bytes of a WOFF2 file. */
  const decompress: (woff2: Uint8Array) => Promise<Uint8Array>
  export default decompress
}
