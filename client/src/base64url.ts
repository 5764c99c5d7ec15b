/** base64url without padding (RFC 4648 §5) of a string's UTF-8 bytes; no Buffer, no btoa: browsers and Node alike. */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const encoder = new TextEncoder();

/** The base64url text (no `=` padding) of `text` encoded as UTF-8. */
export function base64UrlOf(text: string): string {
  const bytes = encoder.encode(text);
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63] + ALPHABET[n & 63];
  }
  const rest = bytes.length - i;
  if (rest === 0) return out;
  const n = (bytes[i] << 16) | (rest === 2 ? bytes[i + 1] << 8 : 0);
  out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63];
  return rest === 2 ? out + ALPHABET[(n >> 6) & 63] : out;
}

/** The length of base64url (no padding) of `byteCount` bytes. */
export function base64UrlLength(byteCount: number): number {
  return Math.ceil((byteCount * 4) / 3);
}

/** The number of bytes `text` takes in UTF-8 (a lone surrogate counts 3, as TextEncoder writes U+FFFD). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}
