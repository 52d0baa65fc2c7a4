/**
 * A 64-bit digest of a text: two 32-bit FNV-1a hashes of its UTF-16 code units, with
 * different seeds. Enough to tell a damaged, cut or changed text from the one it was made
 * of (a checkpoint's checksum, a turn's text kept only as a digest by `--verify`); not a
 * defence against anyone who means to forge one. No Node import: the reducers use it, and
 * the report's page is type-checked against them for the browser.
 */
export function textDigest(text: string): string {
  return fnv(text, 0x811c9dc5).toString(16).padStart(8, "0") + fnv(text, 0x01000193 ^ 0x5bd1e995).toString(16).padStart(8, "0");
}

function fnv(text: string, seed: number): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
