// The access log's writer (src/http/access-log.ts) on its own: whole lines in chunks a pipe writes atomically, lines
// out within FLUSH_MS on a quiet server, forged addresses neutralised, and a blocked output that costs dropped lines
// (counted and reported) instead of memory or waiting requests.
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { AccessLog, ATOMIC_CHUNK_BYTES, FLUSH_MS, LineHead, writeHundredths } from '../../src/http/access-log.ts';

class Chunks {
  readonly chunks: string[] = [];
  write(chunk: string): void {
    this.chunks.push(chunk);
  }
  lines(): Array<Record<string, unknown>> {
    return this.chunks.join('').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}

const LINE = { method: 'POST', route: '/api/guest/serviceapikey/check', status: 200, ms: 0.41234, ip: '203.0.113.9' };

/** Records `line` (the writer takes its fields one by one: no object per request). */
function put(log: AccessLog, line: typeof LINE): void {
  log.record(line.method, line.route, line.status, line.ms, line.ip);
}

describe('AccessLog', () => {
  it('writes each request as one JSON line with the route, status, rounded duration and address', async () => {
    const sink = new Chunks();
    const log = new AccessLog(sink);
    put(log, LINE);
    put(log, { ...LINE, method: 'GET', route: '-', status: 404, ip: '2001:db8::1' });
    await log.close();
    expect(sink.lines()).toEqual([
      { time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), method: 'POST', route: '/api/guest/serviceapikey/check', status: 200, ms: 0.41, ip: '203.0.113.9' },
      { time: expect.any(String), method: 'GET', route: '-', status: 404, ms: 0.41, ip: '2001:db8::1' },
    ]);
  });

  it('writes "-" for an address that is not one (a forged X-Forwarded-For cannot break or add lines)', async () => {
    const sink = new Chunks();
    const log = new AccessLog(sink);
    put(log, { ...LINE, ip: '1.2.3.4"}\n{"evil":true' });
    put(log, { ...LINE, ip: 'x'.repeat(10) });
    // The writer remembers the last address it checked: a good one after a bad one, and back, are each judged anew.
    put(log, LINE);
    put(log, { ...LINE, ip: '1.2.3.4"}\n{"evil":true' });
    put(log, { ...LINE, route: '/api/guest/"quoted"\\route' });
    await log.close();
    expect(sink.lines().map((line) => line.ip)).toEqual(['-', '-', '203.0.113.9', '-', '203.0.113.9']);
    expect(sink.lines().at(-1)!.route).toBe('/api/guest/"quoted"\\route');
  });

  it('counts a line no chunk can hold as dropped, and goes on with the next', async () => {
    const sink = new Chunks();
    const log = new AccessLog(sink, ATOMIC_CHUNK_BYTES);
    put(log, LINE);
    put(log, { ...LINE, route: `/${'r'.repeat(ATOMIC_CHUNK_BYTES)}` });
    put(log, { ...LINE, status: 404 });
    await log.close();
    expect(sink.chunks.join('').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ status: 200 }),
      expect.objectContaining({ status: 404 }),
      expect.objectContaining({ msg: 'access log: 1 lines dropped, the output did not keep up' }),
    ]);
  });

  it('writes times exactly as toISOString does, across seconds, in any order, and for odd times', () => {
    const head = new LineHead();
    const start = Date.UTC(2026, 10, 23, 23, 59, 58, 990);
    const times = [
      // Through a second's, a minute's, an hour's and a day's end, millisecond by millisecond.
      ...Array.from({ length: 2100 }, (_, i) => start + i),
      // Back and forth, as requests that ended out of order.
      start + 5,
      start + 1005,
      start + 5,
      // Milliseconds with one, two and three digits after a second seen before.
      Date.UTC(2026, 0, 1, 0, 0, 0, 7),
      Date.UTC(2026, 0, 1, 0, 0, 0, 70),
      Date.UTC(2026, 0, 1, 0, 0, 0, 700),
      // The first second, a leap day, a six-digit year, before 1970, and not a whole millisecond.
      0,
      Date.UTC(2028, 1, 29, 12, 0, 0, 1),
      Date.UTC(20000, 0, 1, 0, 0, 0, 42),
      Date.UTC(20000, 0, 1, 0, 0, 0, 999),
      8.64e15,
      -1,
      -86_400_001,
      start + 0.5,
      start + 1,
    ];
    for (const ms of times) {
      head.at(ms);
      expect(head.bytes.toString('latin1', 0, head.length)).toBe(`{"time":"${new Date(ms).toISOString()}","method":"`);
    }
  });

  it('writes durations with two decimals, rounded, digit by digit', () => {
    const written = (ms: number): string => {
      const bytes = Buffer.alloc(32, '#');
      const end = writeHundredths(bytes, 3, ms);
      expect(bytes.subarray(0, 3).toString()).toBe('###'); // nothing before where it was told to write
      return bytes.toString('latin1', 3, end);
    };
    const cases: Array<[number, string]> = [
      [0, '0.00'],
      [0.004, '0.00'],
      [0.005, '0.01'],
      [0.41234, '0.41'],
      [0.999, '1.00'],
      [1, '1.00'],
      [3.1, '3.10'],
      [9.99, '9.99'],
      [10, '10.00'],
      [12.345678, '12.35'],
      [99.995, '100.00'],
      [999.995, '1000.00'],
      [61_234.5, '61234.50'],
      [1_000_000_007.06, '1000000007.06'],
      // Never a duration, but the line must stay JSON: nothing below 0.00, nothing longer than its room.
      [-3, '0.00'],
      [Number.NaN, '0.00'],
      [Number.POSITIVE_INFINITY, '99999999999.99'],
      [1e20, '99999999999.99'],
    ];
    for (const [ms, text] of cases) expect([ms, written(ms)]).toEqual([ms, text]);
    // Every hundredth up to 10 s, against the number's own text.
    for (let total = 0; total <= 1_000_000; total++) {
      const bytes = new Uint8Array(16);
      const text = Buffer.from(bytes.buffer, 0, writeHundredths(bytes, 0, total / 100)).toString('latin1');
      if (Number(text) !== total / 100 || !/^\d+\.\d\d$/.test(text)) expect([total, text]).toBe('a duration written as it is');
    }
  });

  it('hands out whole lines in chunks of at most 4096 bytes in a cluster worker, 64 KiB in a single process', async () => {
    for (const [chunkBytes, sink] of [
      [ATOMIC_CHUNK_BYTES, new Chunks()],
      [65_536, new Chunks()],
    ] as const) {
      const log = chunkBytes === ATOMIC_CHUNK_BYTES ? new AccessLog(sink, ATOMIC_CHUNK_BYTES) : new AccessLog(sink);
      for (let i = 0; i < 3000; i++) put(log, { ...LINE, status: 200 + (i % 300) });
      await log.close();
      expect(sink.chunks.length).toBeGreaterThan(1);
      for (const chunk of sink.chunks) {
        expect(Buffer.byteLength(chunk)).toBeLessThanOrEqual(chunkBytes);
        expect(chunk.endsWith('\n')).toBe(true);
      }
      // Full chunks are close to the size: not a write per line.
      expect(Buffer.byteLength(sink.chunks[0]!)).toBeGreaterThan(chunkBytes - 200);
      expect(sink.lines()).toHaveLength(3000);
    }
  });

  it(`writes a quiet server's lines within ${FLUSH_MS} ms, without waiting for a full chunk`, async () => {
    const sink = new Chunks();
    const log = new AccessLog(sink);
    put(log, LINE);
    expect(sink.chunks).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, FLUSH_MS * 2 + 50));
    expect(sink.lines()).toHaveLength(1);
    await log.close();
  });

  // Node makes a piped stdout non-blocking (a full pipe answers EAGAIN); a FIFO opened without O_NONBLOCK blocks the
  // writing thread instead. Both must end with every line either written or counted as dropped, never lost.
  it.each([
    ['blocking', 0],
    ['non-blocking', constants.O_NONBLOCK],
  ])('drops lines while a %s output is full, never holding more than the bounded queue, and reports how many once it drains', async (_kind, flags) => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-access-'));
    const fifo = join(dir, 'out');
    execFileSync('mkfifo', [fifo]);
    // Read-write so opening does not wait for a reader; nobody reads yet, so writes block once the pipe is full.
    const fd = openSync(fifo, constants.O_RDWR | flags);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const log = new AccessLog(fd, ATOMIC_CHUNK_BYTES);
      const total = 60_000;
      for (let i = 0; i < total; i++) {
        put(log, LINE);
        if (i % 1000 === 0) log.flush();
      }
      log.flush();
      await new Promise((resolve) => setTimeout(resolve, 100));
      // Drain the pipe until the writer has nothing more to say.
      let text = '';
      const buffer = Buffer.alloc(65_536);
      let quiet = 0;
      while (quiet < 40) {
        let read = 0;
        try {
          read = readSync(reader, buffer, 0, buffer.length, null);
        } catch {
          read = 0; // EAGAIN: nothing to read right now
        }
        if (read > 0) {
          text += buffer.subarray(0, read).toString();
          quiet = 0;
        } else {
          quiet++;
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      }
      await log.close();
      const lines = text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as { msg?: string });
      const note = lines.find((line) => line.msg !== undefined);
      expect(note?.msg).toMatch(/^access log: \d+ lines dropped/);
      const dropped = Number(/(\d+) lines dropped/.exec(note!.msg!)![1]);
      const written = lines.filter((line) => line.msg === undefined).length;
      expect(dropped).toBeGreaterThan(0);
      expect(written + dropped).toBe(total);
    } finally {
      closeSync(reader);
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fills written chunk buffers again, and no line is overwritten, lost or written twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'access-log-'));
    const file = join(dir, 'access.log');
    const fd = openSync(file, 'w');
    const allocations = vi.spyOn(Buffer, 'allocUnsafe');
    try {
      const log = new AccessLog(fd, ATOMIC_CHUNK_BYTES);
      const total = 6000;
      // As under load: a chunk fills (about 34 lines here) while the one before it is written. Every 30 lines the
      // test waits until the writes have caught up (a pause the disk needs, however busy the machine), so at most two
      // chunks are ever sealed at once and the bound below holds on any machine.
      for (let i = 0; i < total; i++) {
        put(log, { ...LINE, status: 200 + (i % 300), ms: i / 100 });
        if (i % 30 === 29) while (!log.idle) await new Promise((resolve) => setTimeout(resolve, 1));
      }
      await log.close();
      const chunkBuffers = allocations.mock.calls.filter(([size]) => size === ATOMIC_CHUNK_BYTES).length;
      const lines = readFileSync(file, 'latin1').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as { ms: number; status: number });
      expect(lines.map((line) => Math.round(line.ms * 100))).toEqual(Array.from({ length: total }, (_, i) => i));
      expect(lines.every((line, i) => line.status === 200 + (i % 300))).toBe(true);
      // Some 170 chunks went out through a handful of buffers (one per chunk without the reuse): the one being filled,
      // the ones being written and the spares, never more than a few with at most two chunks sealed at once.
      expect(statSync(file).size / ATOMIC_CHUNK_BYTES).toBeGreaterThan(150);
      expect(chunkBuffers).toBeLessThanOrEqual(6);
    } finally {
      allocations.mockRestore();
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
