// Reading JSON stored in text columns (a key's options and custom parameters, a product's config).

/** The object stored in `text`; `{}` for anything else (malformed text, an array, a scalar): a record reads as empty. */
export function parseObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
