// The access log's writer (src/http/access-log.ts) on its own: whole lines in chunks a pipe writes atomically, lines
// out within FLUSH_MS on a quiet server, forged addresses neutralised, and a blocked output that costs dropped lines
// (counted and reported) instead of memory or waiting requests.
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { AccessLog, ATOMIC_CHUNK_BYTES, FLUSH_MS, hundredths } from '../src/http/access-log.ts';

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

describe('AccessLog', () => {
  it('writes each request as one JSON line with the route, status, rounded duration and address', async () => {
    const sink = new Chunks();
    const log = new AccessLog(sink);
    log.record(LINE);
    log.record({ ...LINE, method: 'GET', route: '-', status: 404, ip: '2001:db8::1' });
    await log.close();
    expect(sink.lines()).toEqual([
      { time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), method: 'POST', route: '/api/guest/serviceapikey/check', status: 200, ms: 0.41, ip: '203.0.113.9' },
      { time: expect.any(String), method: 'GET', route: '-', status: 404, ms: 0.41, ip: '2001:db8::1' },
    ]);
  });

  it('writes "-" for an address that is not one (a forged X-Forwarded-For cannot break or add lines)', async () => {
    const sink = new Chunks();
    const log = new AccessLog(sink);
    log.record({ ...LINE, ip: '1.2.3.4"}\n{"evil":true' });
    log.record({ ...LINE, ip: 'x'.repeat(10) });
    // The writer remembers the last address it checked: a good one after a bad one, and back, are each judged anew.
    log.record(LINE);
    log.record({ ...LINE, ip: '1.2.3.4"}\n{"evil":true' });
    log.record({ ...LINE, route: '/api/guest/"quoted"\\route' });
    await log.close();
    expect(sink.lines().map((line) => line.ip)).toEqual(['-', '-', '203.0.113.9', '-', '203.0.113.9']);
    expect(sink.lines().at(-1)!.route).toBe('/api/guest/"quoted"\\route');
  });

  it('writes durations with two decimals, rounded', () => {
    expect([0, 0.004, 0.005, 0.41234, 0.999, 1, 3.1, 12.345678, 999.995, 61_234.5].map(hundredths)).toEqual(['0.00', '0.00', '0.01', '0.41', '1.00', '1.00', '3.10', '12.35', '1000.00', '61234.50']);
  });

  it('hands out whole lines in chunks of at most 4096 bytes in a cluster worker, 64 KiB in a single process', async () => {
    for (const [chunkBytes, sink] of [
      [ATOMIC_CHUNK_BYTES, new Chunks()],
      [65_536, new Chunks()],
    ] as const) {
      const log = chunkBytes === ATOMIC_CHUNK_BYTES ? new AccessLog(sink, ATOMIC_CHUNK_BYTES) : new AccessLog(sink);
      for (let i = 0; i < 3000; i++) log.record({ ...LINE, status: 200 + (i % 300) });
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
    log.record(LINE);
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
        log.record(LINE);
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
      // As under load: a chunk fills (about 34 lines here) while the one before it is written.
      for (let i = 0; i < total; i++) {
        log.record({ ...LINE, status: 200 + (i % 300), ms: i / 100 });
        if (i % 30 === 29) await new Promise((resolve) => setTimeout(resolve, 1));
      }
      await log.close();
      const chunkBuffers = allocations.mock.calls.filter(([size]) => size === ATOMIC_CHUNK_BYTES).length;
      const lines = readFileSync(file, 'latin1').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as { ms: number; status: number });
      expect(lines.map((line) => Math.round(line.ms * 100))).toEqual(Array.from({ length: total }, (_, i) => i));
      expect(lines.every((line, i) => line.status === 200 + (i % 300))).toBe(true);
      // Some 170 chunks went out through a handful of buffers.
      expect(statSync(file).size / ATOMIC_CHUNK_BYTES).toBeGreaterThan(150);
      expect(chunkBuffers).toBeLessThanOrEqual(1 + 2 + 2);
    } finally {
      allocations.mockRestore();
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
