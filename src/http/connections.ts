// Slow clients (issue 8 item 3): a connection that sends a body one byte every few seconds was never cut, and about
// 1,100 of them from one address made /healthz unreachable. The request, headers and keep-alive timeouts are set on
// the server in app.ts; this caps the connections one address may hold open at once. An IPv6 caller's "address" is
// its prefix (IPV6_PREFIX_LENGTH, issue 20 M7): a /64 holds as many connections as one IPv4 address.
import { isIPv4, type BlockList } from 'node:net';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { AddressGroups } from '../platform/address-groups.ts';
import { normaliseIp } from '../platform/rate-limit.ts';

/**
 * Destroys a new connection at once when its address (group) already holds `max` open ones. Addresses in `exempt`
 * (the rate-limit whitelist: the operator's own application servers, which may pool many connections) are not capped;
 * the whitelist is asked about the single address, never its group.
 */
export function capConnectionsPerAddress(server: Pick<Server, 'on'>, max: number, exempt: BlockList, groups: AddressGroups): void {
  if (max <= 0) return;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = normaliseIp(socket.remoteAddress ?? '');
    if (address === '' || exempt.check(address, isIPv4(address) ? 'ipv4' : 'ipv6')) return;
    const group = groups.keyOf(address);
    const count = (open.get(group) ?? 0) + 1;
    if (count > max) {
      socket.destroy();
      return;
    }
    open.set(group, count);
    socket.once('close', () => {
      const left = (open.get(group) ?? 1) - 1;
      if (left <= 0) open.delete(group);
      else open.set(group, left);
    });
  });
}
