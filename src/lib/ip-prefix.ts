// The group an IP address is limited as (issue 20, M7). One IPv6 customer is given a whole /64 (often a /56 or /48),
// so counting each IPv6 address on its own gave an attacker 2^64 budgets: IPv6 addresses are grouped by their first
// `prefixLength` bits. IPv4-mapped IPv6 (`::ffff:192.0.2.1`, what a server listening on `::` sees for an IPv4 client)
// is the IPv4 address it carries, so one client has one budget whichever way it arrives. IPv4 addresses stay single.

/** The 8 sixteen-bit words of an IPv6 text, or null when it is not one (a zone `%eth0` is ignored). */
export function parseIpv6(text: string): number[] | null {
  const zone = text.indexOf('%');
  const address = zone === -1 ? text : text.slice(0, zone);
  const halves = address.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] === '' ? [] : halves[0]!.split(':');
  const tail = halves.length === 1 || halves[1] === '' ? [] : halves[1]!.split(':');
  const words: number[] = [];
  const tailWords: number[] = [];
  for (const [parts, out] of [
    [head, words],
    [tail, tailWords],
  ] as const) {
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      // A dotted IPv4 tail (`::ffff:192.0.2.1`) is two words, and only the last part may be one.
      if (part.includes('.')) {
        const lastOfAddress = i === parts.length - 1 && (out === tailWords || halves.length === 1);
        const v4 = lastOfAddress ? parseIpv4(part) : null;
        if (v4 === null) return null;
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(part)) return null;
        out.push(parseInt(part, 16));
      }
    }
  }
  const missing = 8 - words.length - tailWords.length;
  // `::` stands for at least one zero word; without it there must be exactly eight.
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  for (let i = 0; i < missing; i++) words.push(0);
  words.push(...tailWords);
  return words;
}

/** The four bytes of a dotted IPv4 text, or null. */
export function parseIpv4(text: string): number[] | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const bytes: number[] = [];
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || (part.length > 1 && part.startsWith('0'))) return null;
    const value = Number(part);
    if (value > 255) return null;
    bytes.push(value);
  }
  return bytes;
}

/** RFC 5952 text: lower-case, no leading zeros, the longest run of two or more zero words (the first if tied) as `::`. */
export function formatIpv6(words: readonly number[]): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let end = i;
    while (end < 8 && words[end] === 0) end++;
    if (end - i > bestLength) {
      bestStart = i;
      bestLength = end - i;
    }
    i = end;
  }
  const hex = words.map((word) => word.toString(16));
  if (bestStart === -1) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/**
 * The key an address is limited under: an IPv4 address itself; an IPv4-mapped IPv6 address as its IPv4 address; any
 * other IPv6 address as its first `prefixLength` bits, `2001:db8:1:2::/64` (at 128, the address itself in RFC 5952
 * form). Text that is no IP address is returned unchanged, so a caller's opaque subject keeps its own budget.
 */
export function addressGroup(address: string, prefixLength: number): string {
  if (!address.includes(':')) return address;
  const words = parseIpv6(address);
  if (words === null) return address;
  if (words[0] === 0 && words[1] === 0 && words[2] === 0 && words[3] === 0 && words[4] === 0 && words[5] === 0xffff) {
    return `${words[6]! >> 8}.${words[6]! & 0xff}.${words[7]! >> 8}.${words[7]! & 0xff}`;
  }
  if (prefixLength >= 128) return formatIpv6(words);
  const masked = words.map((word, i) => {
    const bitsKept = Math.min(16, Math.max(0, prefixLength - i * 16));
    return bitsKept === 0 ? 0 : word & ((0xffff << (16 - bitsKept)) & 0xffff);
  });
  return `${formatIpv6(masked)}/${prefixLength}`;
}
