/** The least estimated entropy an API or admin key may have: past any online or offline guessing. */
export const MIN_KEY_BITS = 128;

/**
 * The alphabet a key was drawn from, judged by the character classes it uses: hex (16), digits (10),
 * lowercase and uppercase letters (26 each), base64's and base64url's two extra characters (`+/`,
 * `-_`; padding `=` adds nothing), and any other printable symbol (the rest of ASCII's 94).
 */
export function alphabetSize(key: string): number {
  if (/^[0-9a-f]+$/.test(key) || /^[0-9A-F]+$/.test(key)) return /^[0-9]+$/.test(key) ? 10 : 16;
  const lower = /[a-z]/.test(key) ? 26 : 0;
  const upper = /[A-Z]/.test(key) ? 26 : 0;
  const digits = /[0-9]/.test(key) ? 10 : 0;
  const symbols = /[^A-Za-z0-9+/=_-]/.test(key) ? 32 : /[+/_-]/.test(key) ? 2 : 0;
  return Math.max(2, lower + upper + digits + symbols);
}

/** Bits of entropy of a key if each of its characters was drawn at random from its alphabet. */
export const estimatedBits = (key: string): number => key.length * Math.log2(alphabetSize(key));

/**
 * Why `key` is too weak to accept, or undefined. Besides the estimate, a key must show about as many
 * distinct characters as a random draw of its length from its alphabet would (at least half as many):
 * `aaaa…`, `abab…` or a word padded with one repeated character are not random, whatever their length.
 */
export function keyWeakness(key: string): string | undefined {
  const bits = estimatedBits(key);
  if (bits < MIN_KEY_BITS) return `about ${Math.floor(bits)} bits of entropy, fewer than ${MIN_KEY_BITS}`;
  const alphabet = alphabetSize(key);
  const expected = alphabet * (1 - (1 - 1 / alphabet) ** key.length);
  const distinct = new Set(key).size;
  if (distinct < expected / 2) return `only ${distinct} distinct characters in ${key.length}: not random`;
  return patterned(key);
}

/**
 * Words people put in keys they choose (case ignored); 6 letters at least, so a random base64 key of
 * 44 characters holds one about once in two million, and a hex key never. why not 5: `token`,
 * `admin` and the like came up about once in 130,000 random keys (a clean clone's CI refused
 * `openssl rand -base64 32`'s `h7fT9Ntokenbmi8N…`).
 */
const CHOSEN_WORDS = [
  'password', 'passwd', 'secret', 'access', 'master', 'default', 'changeme', 'letmein', 'welcome',
  'qwerty', 'staging', 'production', 'develop', 'company', 'service', 'client', 'spring', 'summer', 'autumn',
  'winter', 'monday', 'january', 'dragon', 'monkey', 'private',
];
const CHOSEN = new RegExp(CHOSEN_WORDS.join('|'), 'i');

/**
 * Why `key` looks chosen or patterned rather than generated, or undefined. why these three: a run
 * (`0123…`, `abcd…`) or a repeated stretch passes the estimate and the distinct-character count, and
 * so does a phrase (`Password!2024#Spring`); each is a few of a random key's chances in a million
 * (a step of ±1 between neighbours is 1 in 8 for hex; 8 characters twice, 1 in 10^5 for digits).
 */
export function patterned(key: string): string | undefined {
  let steps = 0;
  for (let i = 1; i < key.length; i++) if (Math.abs(key.charCodeAt(i) - key.charCodeAt(i - 1)) === 1) steps++;
  if (steps >= (key.length - 1) / 2) return `${steps} of its ${key.length - 1} neighbouring characters run in sequence: not random`;
  for (let i = 0; i + 8 <= key.length; i++) {
    if (key.indexOf(key.slice(i, i + 8), i + 1) !== -1) return 'a stretch of 8 characters repeats: not random';
  }
  if (CHOSEN.test(key)) return 'it holds a word: a chosen key, not a generated one';
  return undefined;
}

/** A problem per weak key of `variable`, naming the key by its name, never by its value. */
export function weakKeys(variable: string, keys: ReadonlyArray<{ name: string; key: string }> | undefined): string[] {
  return (keys ?? []).flatMap(({ name, key }) => {
    const weakness = keyWeakness(key);
    return weakness ? [`${variable}: the key named "${name}" is too weak (${weakness}); generate one with openssl rand -hex 32`] : [];
  });
}
