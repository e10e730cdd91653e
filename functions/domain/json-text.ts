/**
 * Checks on a JSON text before it is parsed: what `JSON.parse` would let through but must not reach the rest.
 *
 * - Nesting deeper than a bound: validation walks values recursively, and a 6 KB body of 3,000 nested arrays is
 *   enough to overflow the stack.
 * - A key repeated in one object: `JSON.parse` keeps the last value and drops the others without a word, so the
 *   data stored would not be the data sent.
 */

const isWhitespace = (code: number) => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;

/** What is wrong with the JSON text, or undefined. One linear scan; it leaves syntax errors to `JSON.parse`. */
export function jsonTextProblem(text: string, maxDepth: number): string | undefined {
  // One frame per open container: the keys seen so far for an object, undefined for an array.
  const frames: (Set<string> | undefined)[] = [];
  let i = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (code === 0x22) {
      let end = i + 1;
      while (end < text.length) {
        const c = text.charCodeAt(end);
        if (c === 0x5c) end += 2;
        else if (c === 0x22) break;
        else end++;
      }
      const keys = frames.at(-1);
      if (keys) {
        let next = end + 1;
        while (next < text.length && isWhitespace(text.charCodeAt(next))) next++;
        if (text.charCodeAt(next) === 0x3a) {
          const raw = text.slice(i, end + 1);
          let key: string;
          try {
            key = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
          } catch {
            return undefined;
          }
          if (keys.has(key)) return `the key ${JSON.stringify(key.slice(0, 64))} appears twice in one object`;
          keys.add(key);
        }
      }
      i = end + 1;
      continue;
    }
    if (code === 0x7b || code === 0x5b) {
      frames.push(code === 0x7b ? new Set() : undefined);
      if (frames.length > maxDepth) return `nested deeper than ${maxDepth} objects or arrays`;
    } else if (code === 0x7d || code === 0x5d) frames.pop();
    i++;
  }
  return undefined;
}
