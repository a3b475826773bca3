// The key a caller's address is limited under (src/lib/ip-prefix.ts), remembered per address text: the key check asks
// for it on every request, and a Map lookup costs less than parsing IPv6 text again. IPv4 text needs neither.
import { addressGroup } from '../lib/ip-prefix.ts';

/** Enough for every address seen in a busy minute; past it the memo starts over (an attacker rotating addresses
 * within a /64 sees a new text each time and costs one parse per request, never unbounded memory). */
const MAX_REMEMBERED = 10_000;

export class AddressGroups {
  private readonly memo = new Map<string, string>();

  constructor(readonly ipv6PrefixLength: number) {}

  /** `address`'s group: itself for IPv4 (and for text that is no address), its IPv4 when mapped, its prefix for IPv6. */
  keyOf(address: string): string {
    // IPv4 text and opaque subjects without a colon are their own key: no lookup at all.
    if (!address.includes(':')) return address;
    let key = this.memo.get(address);
    if (key === undefined) {
      key = addressGroup(address, this.ipv6PrefixLength);
      if (this.memo.size >= MAX_REMEMBERED) this.memo.clear();
      this.memo.set(address, key);
    }
    return key;
  }
}
