/**
 * The content types a job type may accept for a file, each recognized by the file's first bytes
 * (its magic number), never by what the client says it is.
 */
export const FILE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/avif', 'image/gif', 'image/tiff', 'application/pdf', 'application/zip'] as const;
export type FileType = (typeof FILE_TYPES)[number];

/** How many leading bytes `sniff` needs to have seen to decide. */
export const SNIFF_BYTES = 32;

const ascii = (head: Uint8Array, at: number, text: string) => text.split('').every((c, i) => head[at + i] === c.charCodeAt(0));
const bytes = (head: Uint8Array, at: number, values: number[]) => values.every((v, i) => head[at + i] === v);

/**
 * The type of a file from its first bytes (at least SNIFF_BYTES of them, or the whole file when it
 * is shorter), or undefined for none of FILE_TYPES.
 */
export function sniff(head: Uint8Array): FileType | undefined {
  if (bytes(head, 0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (bytes(head, 0, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (ascii(head, 0, 'RIFF') && ascii(head, 8, 'WEBP')) return 'image/webp';
  if (ascii(head, 0, 'GIF87a') || ascii(head, 0, 'GIF89a')) return 'image/gif';
  if (ascii(head, 0, 'II*\0') || ascii(head, 0, 'MM\0*')) return 'image/tiff';
  if (ascii(head, 0, '%PDF-')) return 'application/pdf';
  if (bytes(head, 0, [0x50, 0x4b, 0x03, 0x04])) return 'application/zip';
  // An ISO-BMFF `ftyp` box whose major or a compatible brand is AVIF's (still image or sequence).
  if (ascii(head, 4, 'ftyp')) {
    const size = Math.min((head[0] << 24) | (head[1] << 16) | (head[2] << 8) | head[3], head.length);
    for (let at = 8; at + 4 <= size; at += 4) {
      if (at === 12) continue; // the minor version, not a brand
      if (ascii(head, at, 'avif') || ascii(head, at, 'avis')) return 'image/avif';
    }
  }
  return undefined;
}
