import { sniff, SNIFF_BYTES } from './file-types';

const head = (...parts: Array<string | number[]>) =>
  Buffer.concat([...parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))), Buffer.alloc(SNIFF_BYTES)]).subarray(0, SNIFF_BYTES);

describe('sniff: a file type from its first bytes', () => {
  it.each([
    ['image/png', head([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])],
    ['image/jpeg', head([0xff, 0xd8, 0xff, 0xe0])],
    ['image/webp', head('RIFF', [0x10, 0, 0, 0], 'WEBPVP8 ')],
    ['image/gif', head('GIF89a')],
    ['image/tiff', head('II*\0')],
    ['image/tiff', head('MM\0*')],
    ['application/pdf', head('%PDF-1.7')],
    ['application/zip', head([0x50, 0x4b, 0x03, 0x04])],
    ['image/avif', head([0, 0, 0, 0x1c], 'ftypavif', [0, 0, 0, 0], 'avifmif1miaf')],
    ['image/avif', head([0, 0, 0, 0x1c], 'ftypmif1', [0, 0, 0, 0], 'mif1avifmiaf')],
  ])('%s', (type, bytes) => {
    expect(sniff(bytes)).toBe(type);
  });

  it('knows nothing else, whatever the name or header says', () => {
    expect(sniff(head('<html><script>'))).toBeUndefined();
    expect(sniff(head('RIFF', [0, 0, 0, 0], 'WAVE'))).toBeUndefined();
    expect(sniff(head([0, 0, 0, 0x18], 'ftypheic', [0, 0, 0, 0], 'mif1heic'))).toBeUndefined();
    // 'avif' as the minor version is no brand.
    expect(sniff(head([0, 0, 0, 0x14], 'ftypmif1avif', 'heic'))).toBeUndefined();
    expect(sniff(new Uint8Array(0))).toBeUndefined();
  });
});
