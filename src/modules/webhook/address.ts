// Which receivers a webhook may reach (CONTRACT §11): http(s) URLs whose host is a public address. Private, loopback,
// link-local, unspecified, multicast and reserved addresses are refused unless WEBHOOK_ALLOW_PRIVATE=true, at
// create/update and again at send time: a name is resolved when the delivery is made, every address it resolves to
// is checked, and the connection goes to an address that was checked (`pinnedLookup`), so a name that answered with a
// public address at create time and a private one later (DNS rebinding) reaches nothing inside.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';

const refused = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network", includes the unspecified 0.0.0.0
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, includes the broadcast address
] as const) {
  refused.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b::', 96], // NAT64 of IPv4 addresses
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // old site-local
  ['ff00::', 8], // multicast
] as const) {
  refused.addSubnet(network, prefix, 'ipv6');
}

/** Why this address may not receive webhooks, or null when it may. */
export function refusedReason(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return `${address} is not an IP address`;
  // BlockList also matches IPv4-mapped IPv6 addresses (::ffff:127.0.0.1) against the IPv4 rules.
  return refused.check(address, family === 4 ? 'ipv4' : 'ipv6') ? `${address} is a private, loopback or reserved address` : null;
}

export class AddressRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AddressRefused';
  }
}

/** The URL's host without IPv6 brackets, as sockets and DNS take it. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/** Parses a receiver URL; the problem, in words, when it is not one (for a 422). */
export function parseReceiverUrl(text: string): URL | string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute http(s) URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL';
  if (url.username !== '' || url.password !== '') return 'must not contain a user name or password';
  if (url.hostname === '') return 'must have a host';
  return url;
}

function resolveAll(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(host, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });
}

/** Every address the host stands for, each checked; throws AddressRefused when one of them is refused. */
export async function checkedAddresses(host: string): Promise<LookupAddress[]> {
  const family = isIP(host);
  let addresses: LookupAddress[];
  if (family !== 0) {
    addresses = [{ address: host, family }];
  } else {
    try {
      addresses = await resolveAll(host);
    } catch {
      throw new AddressRefused(`${host} does not resolve`);
    }
    if (addresses.length === 0) throw new AddressRefused(`${host} does not resolve`);
  }
  for (const entry of addresses) {
    const reason = refusedReason(entry.address);
    if (reason !== null) throw new AddressRefused(family === 0 ? `${host} resolves to ${reason}` : reason);
  }
  return addresses;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request that resolves the name, refuses it when any address is refused, and hands the socket
 * only the addresses it checked — the socket connects to what was checked, never to a second answer.
 */
export function pinnedLookup(hostname: string, options: { all?: boolean }, callback: LookupCallback): void {
  checkedAddresses(hostname).then(
    (addresses) => {
      if (options.all === true) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    },
    (error: unknown) => callback(error as NodeJS.ErrnoException, ''),
  );
}
