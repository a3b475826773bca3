// The lookup hashes of keys that were recently checked and found, so a warm check skips the HMAC (it was the single
// largest cost of the check after the socket write: about 6 µs of a 65 µs call under load).
// - Only keys that exist are remembered (`remember` is called once a record was found): a flood of random keys can
//   neither grow the memo nor push the real keys out.
// - Bounded: past `maxEntries`, the oldest entry goes (a Map keeps insertion order, so that is O(1)).
// - Nothing to invalidate: a key's hash never changes. A revoked or rotated key keeps its memo entry until pushed
//   out, and the key cache (keyed by the hash) answers for it as before.
// The memo holds raw keys in memory, as the request bodies that carried them do until collected; the database and
// everything written anywhere still hold only hashes. Lookups are a Map get on V8's seeded string hash: a wrong key
// is compared only with a key whose hash collides, which an outsider cannot aim for.
export class KeyHashMemo {
  private readonly hashes = new Map<string, string>();

  constructor(private readonly maxEntries: number) {}

  /** The key's lookup hash when it was remembered. */
  get(key: string): string | undefined {
    return this.hashes.get(key);
  }

  /** Remembers a key known to exist (its hash found a record). Called on the cold path only: a miss. */
  remember(key: string, hash: string): void {
    // Two checks of the same new key can both miss and both get here: the second changes nothing.
    if (this.hashes.has(key)) return;
    if (this.hashes.size >= this.maxEntries) {
      const oldest = this.hashes.keys().next();
      if (oldest.done !== true) this.hashes.delete(oldest.value);
    }
    this.hashes.set(key, hash);
  }

  get size(): number {
    return this.hashes.size;
  }
}
