// Nesting limits for request parameters. A body nested a few thousand levels deep overflows the stack of whatever
// walks it recursively later (validation, JSON.stringify when a config is stored, the response serialiser), which
// answered HTTP 500. Every parser refuses such input up front, before anything recursive touches it; the checks
// here are loops, never recursion, so they cannot overflow themselves.

/** The deepest a parameter may nest: `{"config": {"custom": {...}}}` is depth 2 for `config`. */
export const MAX_NESTING = 32;

/**
 * Whether a JSON text nests deeper than `maxDepth` objects or arrays, counting the outer body as one. One pass over
 * the characters, skipping strings (a `[` inside a string is not nesting); runs before JSON.parse.
 */
export function jsonTooDeep(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i += 1; // backslash: the next character is escaped, whatever it is
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth += 1;
      if (depth > maxDepth) return true;
    } else if (c === 0x7d || c === 0x5d) depth -= 1;
  }
  return false;
}
