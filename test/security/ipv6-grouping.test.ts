// Issue 20, M7: every IPv6 address had a budget of its own, so rotating X-Forwarded-For within one /64 behind
// TRUST_PROXY=1 answered 200 of 200 unknown-key checks (limit 60/min), 60 of 60 wrong passwords for one account
// (10/h) and 15 of 15 sign-ups (5/h). Rate-limit and connection-cap keys now group IPv6 addresses by their first
// IPV6_PREFIX_LENGTH bits (64) and IPv4-mapped IPv6 as its IPv4, behind a proxy and on a `::` listener alike.
import { EventEmitter } from 'node:events';
import { request } from 'node:http';
import { BlockList } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { AddressGroups } from '../../src/platform/address-groups.ts';
import { capConnectionsPerAddress } from '../../src/http/connections.ts';
import { addressGroup, formatIpv6, parseIpv6 } from '../../src/lib/ip-prefix.ts';
import { createTestApp, type Reply, type TestApp } from '../helpers/app.ts';
import { expectError } from '../helpers/assertions.ts';

const PROXY = '10.20.0.1';
/** Unknown, well-formed: every check of it counts under API_KEY_CHECK_FAILED (60 a minute by default). */
const UNKNOWN_KEY = 'AAAAAAAA-BBBBBBBB-CCCCCCCC-DDDDDDDD';

/** The `n`th address of the /64 `prefix` (four words), as a rotating attacker would pick it. */
function inPrefix(prefix: string, n: number): string {
  return `${prefix}:${(n & 0xffff).toString(16)}:${((n >>> 16) & 0xffff).toString(16)}:${((n * 7919) % 65536).toString(16)}:1`;
}

describe('addressGroup (src/lib/ip-prefix.ts)', () => {
  it.each([
    ['2001:db8:1:2:aaaa:bbbb:cccc:dddd', 64, '2001:db8:1:2::/64'],
    ['2001:DB8:1:2::1', 64, '2001:db8:1:2::/64'],
    ['2001:db8:1:2:ffff::1', 48, '2001:db8:1::/48'],
    ['2001:db8:1:2ff::1', 56, '2001:db8:1:200::/56'],
    ['2001:db8:1:2::1', 128, '2001:db8:1:2::1'],
    ['fe80::1%eth0', 64, 'fe80::/64'],
    ['::1', 64, '::/64'],
    ['::ffff:203.0.113.7', 64, '203.0.113.7'],
    ['::FFFF:cb00:7107', 64, '203.0.113.7'],
    ['::ffff:203.0.113.7', 128, '203.0.113.7'],
    ['203.0.113.7', 64, '203.0.113.7'],
    ['2001:db8::1.2.3.4', 128, '2001:db8::102:304'],
    // Not an address: an opaque subject keeps its own key.
    ['client:5', 64, 'client:5'],
    ['1::2::3', 64, '1::2::3'],
    ['1:2:3:4:5:6:7:8:9', 64, '1:2:3:4:5:6:7:8:9'],
    ['::ffff:1.2.3', 64, '::ffff:1.2.3'],
    ['1.2.3.4::', 64, '1.2.3.4::'],
  ])('%s at /%i → %s', (address, bits, expected) => {
    expect(addressGroup(address, bits)).toBe(expected);
  });

  it('parses and prints RFC 5952 text', () => {
    expect(parseIpv6('1:2:3:4:5:6:7::')).toEqual([1, 2, 3, 4, 5, 6, 7, 0]);
    expect(parseIpv6('1:2:3:4:5:6:7:8::')).toBeNull();
    expect(formatIpv6([1, 0, 0, 2, 0, 0, 0, 3])).toBe('1:0:0:2::3');
    expect(formatIpv6([1, 0, 0, 2, 0, 0, 3, 4])).toBe('1::2:0:0:3:4');
    expect(formatIpv6([1, 2, 3, 4, 5, 6, 7, 0])).toBe('1:2:3:4:5:6:7:0');
  });

  it('AddressGroups remembers each text within bounds and leaves IPv4 alone', () => {
    const groups = new AddressGroups(64);
    expect(groups.keyOf('198.51.100.9')).toBe('198.51.100.9');
    for (let i = 0; i < 25_000; i++) expect(groups.keyOf(inPrefix('2001:db8:77:1', i))).toBe('2001:db8:77:1::/64');
    // The memo starts over past 10,000 texts instead of growing.
    expect((groups as unknown as { memo: Map<string, string> }).memo.size).toBeLessThanOrEqual(10_000);
  });
});

describe('IPV6_PREFIX_LENGTH', () => {
  it('defaults to 64; takes 1 to 128; anything else stops the start', () => {
    expect(loadConfig({}).rateLimit.ipv6PrefixLength).toBe(64);
    expect(loadConfig({ IPV6_PREFIX_LENGTH: '48' }).rateLimit.ipv6PrefixLength).toBe(48);
    expect(loadConfig({ IPV6_PREFIX_LENGTH: '128' }).rateLimit.ipv6PrefixLength).toBe(128);
    for (const bad of ['0', '129', '64.5', '/64', 'big']) expect(() => loadConfig({ IPV6_PREFIX_LENGTH: bad }), bad).toThrow(ConfigError);
  });
});

describe.each([64, 48])('behind TRUST_PROXY=1, IPV6_PREFIX_LENGTH=%i (default limits)', (bits) => {
  let t: TestApp;
  // Distinct per run of the describe: one PostgreSQL/Redis counter space is shared by nothing else, but be explicit.
  const prefix = bits === 64 ? '2001:db8:20:1' : '2001:db8:48:1';
  /** Within the same group: the same /64, or (at /48) another /64 of the same /48. */
  const sameGroup = (n: number) => inPrefix(bits === 64 ? prefix : `2001:db8:48:${(n % 200) + 2}`, n);
  const otherGroup = bits === 64 ? '2001:db8:20:2' : '2001:db8:49:1';

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: '1', IPV6_PREFIX_LENGTH: String(bits) });
  });
  afterAll(async () => {
    await t.close();
  });

  const from = (address: string) => ({ ip: PROXY, headers: { 'x-forwarded-for': address } });

  it('200 unknown-key checks, each from another address of the group → 60 answered, the rest 429', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 200; i++) {
      const reply = await t.call('/api/guest/serviceapikey/check', { key: UNKNOWN_KEY }, from(sameGroup(i)));
      if (reply.status === 200) expect(reply.result).toBe(false);
      else expectError(reply, 429);
      statuses.push(reply.status);
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(60);
    expect(statuses.slice(60).every((status) => status === 429)).toBe(true);
    // Another group has a budget of its own.
    const other = await t.call('/api/guest/serviceapikey/check', { key: UNKNOWN_KEY }, from(`${otherGroup}::5`));
    expect(other.status).toBe(200);
    expect(other.result).toBe(false);
  });

  it('60 wrong passwords for one account from 60 addresses of the group → 10 answered 401, the rest 429', async () => {
    const client = await t.createClient();
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) {
      const reply = await t.call('/api/guest/client/login', { email: client.email, password: `wrong-${i}` }, from(sameGroup(1000 + i)));
      statuses.push(reply.status);
    }
    expect(statuses.slice(0, 10)).toEqual(Array.from({ length: 10 }, () => 401));
    expect(statuses.slice(10).every((status) => status === 429)).toBe(true);
    // The owner, from another network, still logs in.
    expect((await t.call('/api/guest/client/login', { email: client.email, password: client.password }, from(`${otherGroup}::9`))).status).toBe(200);
  });

  it('15 sign-ups from 15 addresses of the group → 5 accepted, the rest 429; another group signs up', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++) {
      const params = { email: `v6-${bits}-${i}@example.com`, first_name: 'Six', password: 'Signup-Passw0rd', password_confirm: 'Signup-Passw0rd' };
      statuses.push((await t.call('/api/guest/client/create', params, from(sameGroup(2000 + i)))).status);
    }
    expect(statuses).toEqual([...Array.from({ length: 5 }, () => 200), ...Array.from({ length: 10 }, () => 429)]);
    const params = { email: `v6-${bits}-other@example.com`, first_name: 'Six', password: 'Signup-Passw0rd', password_confirm: 'Signup-Passw0rd' };
    expect((await t.call('/api/guest/client/create', params, from(`${otherGroup}::1`))).status).toBe(200);
  });

  it('an IPv4-mapped address shares the budget of its IPv4 address', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 61; i++) {
      const address = i % 2 === 0 ? '::ffff:203.0.113.7' : '203.0.113.7';
      statuses.push((await t.call('/api/guest/serviceapikey/check', { key: UNKNOWN_KEY }, from(address))).status);
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(60);
    expect(statuses[60]).toBe(429);
    expectError(await t.call('/api/guest/serviceapikey/check', { key: UNKNOWN_KEY }, from('::ffff:cb00:7107')), 429);
    // A neighbouring IPv4 address is not grouped with it.
    expect((await t.call('/api/guest/serviceapikey/check', { key: UNKNOWN_KEY }, from('203.0.113.8'))).status).toBe(200);
  });
});

describe('IPV6_PREFIX_LENGTH=128: every address alone (the setting is honoured)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: '1', IPV6_PREFIX_LENGTH: '128', RATE_LIMIT_SIGNUP: '1/3600' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('two addresses of one /64 sign up once each', async () => {
    for (const [i, address] of ['2001:db8:128:1::1', '2001:db8:128:1::2'].entries()) {
      const params = { email: `alone-${i}@example.com`, first_name: 'One', password: 'Signup-Passw0rd', password_confirm: 'Signup-Passw0rd' };
      expect((await t.call('/api/guest/client/create', params, { ip: PROXY, headers: { 'x-forwarded-for': address } })).status).toBe(200);
    }
  });
});

/** POST `body` as JSON over a real socket (the key check's direct road), from `localAddress` when given. */
function post(port: number, host: string, path: string, body: unknown, headers: Record<string, string> = {}, localAddress?: string): Promise<Reply> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      { host, port, path, method: 'POST', agent: false, ...(localAddress !== undefined && { localAddress }), headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)), ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          const parsed = JSON.parse(text) as Reply['body'];
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed, result: parsed.result, cookies: {} });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe('the direct road (a real socket) behind TRUST_PROXY=1', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: '1', RATE_LIMIT_API_KEY_CHECK_FAILED: '5/60' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await t.close();
  });

  it('unknown-key checks rotating within one /64 share one budget; another /64 has its own', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      statuses.push((await post(port, '127.0.0.1', '/api/guest/serviceapikey/check', { key: UNKNOWN_KEY }, { 'x-forwarded-for': inPrefix('2001:db8:d1:1', i) })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    expect((await post(port, '127.0.0.1', '/api/guest/serviceapikey/check', { key: UNKNOWN_KEY }, { 'x-forwarded-for': '2001:db8:d1:2::1' })).status).toBe(200);
  });
});

/** Whether this machine has the IPv6 loopback `::1` (a container may have IPv6 switched off). */
function hasIpv6Loopback(): boolean {
  return Object.values(networkInterfaces()).some((list) => list?.some((entry) => entry.family === 'IPv6' && entry.address === '::1'));
}

describe.skipIf(!hasIpv6Loopback())('a listener on `::` without a proxy (skipped where the machine has no IPv6 loopback ::1)', () => {
  let t: TestApp;
  let port: number;
  const verifyCheck = (ip: string) =>
    post(port, '::1', '/api/admin/serviceapikey/check', { key: UNKNOWN_KEY, ip }, { authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` });

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_API_KEY_CHECK_FAILED: '5/60' });
    await t.app.listen({ port: 0, host: '::' });
    port = (t.app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await t.close();
  });

  it('an IPv4 client (seen as ::ffff:127.0.0.2) shares its budget with 127.0.0.2 named anywhere else', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await post(port, '127.0.0.1', '/api/guest/serviceapikey/check', { key: UNKNOWN_KEY }, {}, '127.0.0.2')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    // A verifier naming the same end user by its IPv4 text meets the spent budget…
    expectError(await verifyCheck('127.0.0.2'), 429);
    // …and one naming another address does not.
    const other = await verifyCheck('127.0.0.3');
    expect(other.status).toBe(200);
    expect(other.result).toBe(false);
  });

  it('::1 spends the budget of its whole /64 (::/64); another /64 keeps its own', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await post(port, '::1', '/api/guest/serviceapikey/check', { key: UNKNOWN_KEY })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expectError(await verifyCheck('::2'), 429);
    expectError(await verifyCheck('::abcd:1'), 429);
    expect((await verifyCheck('0:0:0:1::1')).status).toBe(200);
  });
});

describe('the per-address connection cap groups IPv6 callers too', () => {
  class FakeSocket extends EventEmitter {
    destroyed = false;
    constructor(readonly remoteAddress: string) {
      super();
    }
    destroy(): void {
      this.destroyed = true;
      this.emit('close');
    }
  }

  function capped(bits: number, exempt = new BlockList()): (address: string) => FakeSocket {
    const server = new EventEmitter();
    capConnectionsPerAddress(server as never, 3, exempt, new AddressGroups(bits));
    return (address) => {
      const socket = new FakeSocket(address);
      server.emit('connection', socket);
      return socket;
    };
  }

  it('three connections per /64: the fourth address of the /64 is refused, another /64 is not', () => {
    const open = capped(64);
    const sockets = [1, 2, 3, 4].map((n) => open(`2001:db8:c:1::${n}`));
    expect(sockets.map((socket) => socket.destroyed)).toEqual([false, false, false, true]);
    expect(open('2001:db8:c:2::1').destroyed).toBe(false);
    // One closes: its group has room again.
    sockets[0]!.destroy();
    expect(open('2001:db8:c:1::99').destroyed).toBe(false);
  });

  it('IPv4-mapped and plain IPv4 count together; at /128 each IPv6 address alone', () => {
    const open = capped(64);
    expect([open('::ffff:198.51.100.1'), open('198.51.100.1'), open('::ffff:198.51.100.1'), open('198.51.100.1')].map((s) => s.destroyed)).toEqual([false, false, false, true]);
    const alone = capped(128);
    expect([1, 2, 3, 4].map((n) => alone(`2001:db8:c:1::${n}`).destroyed)).toEqual([false, false, false, false]);
  });

  it('a whitelisted address is exempt, though its /64 is full', () => {
    const exempt = new BlockList();
    exempt.addAddress('2001:db8:c:1::10', 'ipv6');
    const open = capped(64, exempt);
    for (let n = 1; n <= 3; n++) open(`2001:db8:c:1::${n}`);
    expect(open('2001:db8:c:1::4').destroyed).toBe(true);
    expect(open('2001:db8:c:1::10').destroyed).toBe(false);
  });
});
