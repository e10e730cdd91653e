/** mulberry32: a small seeded PRNG, so tests, benchmarks and chaos runs that draw randomness are repeatable. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * A JSON payload of exactly `bytes` bytes (at least 11) made of random base64url text: the payload a compressor
 * does worst with short of encrypted data (six bits of entropy per byte, so deflate saves about a quarter).
 */
export function randomTextPayload(bytes: number, random: () => number): { data: string } {
  const length = Math.max(0, bytes - JSON.stringify({ data: '' }).length);
  let data = '';
  for (let i = 0; i < length; i++) data += BASE64URL[Math.floor(random() * 64)];
  return { data };
}
