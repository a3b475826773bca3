// The access log (ACCESS_LOG=true, CONTRACT §13): one JSON line per request, at a cost the key check can afford.
// pino over SonicBoom cost 3–6 µs a line (serialising an object, measuring every string's UTF-8 length), a quarter of
// a check; this writer builds the line from a template (0.4 µs) and copies it into a chunk, a Buffer written as is.
// - Chunks are written whole, asynchronously, one at a time. A cluster worker's hold at most 4096 bytes: a pipe takes
//   a write of up to PIPE_BUF (4096 on Linux) in one piece, so lines from several workers sharing stdout never
//   interleave. A single process, the only writer, writes up to 64 KiB at once (sixteen times fewer writes). Every
//   field is ASCII (method, route template, number, a sanitised address), so characters are bytes.
// - Node makes a piped stdout non-blocking: a full pipe answers EAGAIN, and the chunk then waits at the head of the
//   queue and is tried again RETRY_MS later (it is neither lost nor written twice).
// - A full chunk goes out at once, a partial one within FLUSH_MS, so a quiet server's lines are not held back. A
//   written chunk's buffer takes the lines after next.
// - When the output cannot keep up (a blocked pipe), at most MAX_QUEUED_BYTES wait; later lines are dropped and
//   counted, and the count is written as a line of its own once the output drains. Requests never wait for the log.
// The line names the route template, never the URL sent: no query string, header, cookie, body, key or token.
import cluster from 'node:cluster';
import { write, writeSync } from 'node:fs';

export interface AccessLine {
  method: string;
  route: string;
  status: number;
  ms: number;
  ip: string;
}

/** Where chunks go: a file descriptor (stdout by default) or, in tests, anything with `write(text)`. */
export type AccessSink = number | { write(chunk: string): unknown };

/** PIPE_BUF on Linux: the largest write a pipe never interleaves with another writer's. */
export const ATOMIC_CHUNK_BYTES = 4096;
const SINGLE_WRITER_CHUNK_BYTES = 65_536;
/** What may wait for a blocked output before lines are dropped. */
const MAX_QUEUED_BYTES = 4 * 1024 * 1024;
export const FLUSH_MS = 250;
const RETRY_MS = 20;

/** An address as it may appear in the line: IPv4/IPv6 characters only (a forged X-Forwarded-For cannot inject). */
function safeAddress(ip: string): string {
  return /^[0-9A-Fa-f:.]{1,45}$/.test(ip) ? ip : '-';
}

/**
 * Milliseconds to two decimals ("0.41", "12.05", "3.00"), from integers: turning a fraction into text costs V8 about
 * as much as the rest of the line together, a whole number a fraction of that.
 */
export function hundredths(ms: number): string {
  const total = Math.round(ms * 100);
  const cents = total % 100;
  return `${(total - cents) / 100}.${cents < 10 ? '0' : ''}${cents}`;
}

/** A sealed chunk: whole lines, and how many (counted as dropped if it cannot be queued). */
interface Chunk {
  bytes: Buffer;
  lines: number;
  /** The chunk buffer `bytes` is a view of, to fill again once written (absent for a one-off line). */
  whole?: Buffer;
}

/** Written chunk buffers kept for the next chunks: enough for the one being filled while one is written. */
const SPARE_CHUNKS = 2;

export class AccessLog {
  /** The chunk being filled: lines are copied into it as they come, so no string grows and none is re-encoded. */
  private buffer: Buffer;
  private used = 0;
  private lines = 0;
  private readonly queue: Chunk[] = [];
  /**
   * Chunk buffers already written, filled again rather than allocated: a fresh 64 KiB Buffer per chunk was a third of
   * the log's cost in a profile of the check under load (ArrayBuffer allocation, about 0.3 ms each).
   */
  private readonly spare: Buffer[] = [];
  private writing = false;
  private dropped = 0;
  private lastMs = 0;
  private lastIso = '';
  /** Route templates as JSON strings (a few hundred at most: the routes the server has). */
  private readonly routeJson = new Map<string, string>();
  /** The last address seen and its form in the line: a client's requests come one after another. */
  private lastIp = '';
  private lastSafeIp = '-';
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  private readonly maxQueued: number;

  /** `chunkBytes`: 4096 in a cluster worker (one of several writers), 64 KiB otherwise. */
  constructor(
    private readonly sink: AccessSink = 1,
    private readonly chunkBytes = cluster.isWorker ? ATOMIC_CHUNK_BYTES : SINGLE_WRITER_CHUNK_BYTES,
  ) {
    this.maxQueued = Math.max(1, Math.floor(MAX_QUEUED_BYTES / chunkBytes));
    this.buffer = Buffer.allocUnsafe(chunkBytes);
    this.timer = setInterval(() => this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  record(line: AccessLine): void {
    if (this.closed) return;
    const now = Date.now();
    if (now !== this.lastMs) {
      this.lastMs = now;
      this.lastIso = new Date(now).toISOString();
    }
    let route = this.routeJson.get(line.route);
    if (route === undefined) {
      route = JSON.stringify(line.route);
      this.routeJson.set(line.route, route);
    }
    if (line.ip !== this.lastIp) {
      this.lastIp = line.ip;
      this.lastSafeIp = safeAddress(line.ip);
    }
    const text = `{"time":"${this.lastIso}","method":"${line.method}","route":${route},"status":${line.status},"ms":${hundredths(line.ms)},"ip":"${this.lastSafeIp}"}\n`;
    // Every character is ASCII (see the top of this file): its length is its size in bytes.
    if (this.used + text.length > this.chunkBytes) {
      this.seal();
      // Out at once rather than at the next flush: a written chunk's buffer then comes back for the one after.
      this.pump();
    }
    if (this.queue.length >= this.maxQueued) {
      this.dropped++;
      return;
    }
    this.used += this.buffer.write(text, this.used, 'latin1');
    this.lines++;
  }

  /** Hands the current chunk to the writer now (and, every FLUSH_MS, by itself). */
  flush(): void {
    if (this.used > 0) this.seal();
    this.pump();
  }

  /** Writes everything still held, synchronously, once the write in flight has ended; then records nothing more. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    // A write stuck on a blocked pipe is waited for a second at most: shutdown must not hang on the log.
    for (let waited = 0; this.writing && waited < 1000; waited += 5) await new Promise((resolve) => setTimeout(resolve, 5));
    if (this.used > 0) this.seal();
    this.noteDropped();
    for (const chunk of this.queue.splice(0)) this.writeNow(chunk.bytes);
  }

  private seal(): void {
    if (this.queue.length < this.maxQueued) {
      this.queue.push({ bytes: this.buffer.subarray(0, this.used), lines: this.lines, whole: this.buffer });
      this.buffer = this.spare.pop() ?? Buffer.allocUnsafe(this.chunkBytes);
    } else this.dropped += this.lines;
    this.used = 0;
    this.lines = 0;
  }

  private noteDropped(): void {
    if (this.dropped === 0) return;
    const note = `{"time":"${new Date().toISOString()}","msg":"access log: ${this.dropped} lines dropped, the output did not keep up"}\n`;
    this.queue.push({ bytes: Buffer.from(note, 'latin1'), lines: 1 });
    this.dropped = 0;
  }

  private pump(): void {
    if (this.writing) return;
    if (this.queue.length === 0) {
      this.noteDropped();
      if (this.queue.length === 0) return;
    }
    const chunk = this.queue.shift()!;
    if (typeof this.sink !== 'number') {
      this.sink.write(chunk.bytes.toString('latin1'));
      this.written(chunk);
      this.pump();
      return;
    }
    this.writing = true;
    write(this.sink, chunk.bytes, (error, written) => {
      if (error !== null && error.code === 'EAGAIN') {
        // The output is full: the chunk goes first again, once the reader has had a moment.
        this.queue.unshift(chunk);
        setTimeout(() => {
          this.writing = false;
          this.pump();
        }, RETRY_MS).unref();
        return;
      }
      this.writing = false;
      // A short write (a pipe with less room than the chunk) goes out again from where it stopped.
      if (error === null && written < chunk.bytes.length) this.queue.unshift({ bytes: chunk.bytes.subarray(written), lines: 0, ...(chunk.whole !== undefined && { whole: chunk.whole }) });
      // Any other write error (stdout closed) loses that chunk; the server keeps serving.
      else this.written(chunk);
      this.pump();
    });
  }

  /** A chunk is out (or lost): its buffer can take new lines. Only now, never while a write may still read it. */
  private written(chunk: Chunk): void {
    if (chunk.whole !== undefined && this.spare.length < SPARE_CHUNKS) this.spare.push(chunk.whole);
  }

  private writeNow(bytes: Buffer): void {
    if (typeof this.sink !== 'number') {
      this.sink.write(bytes.toString('latin1'));
      return;
    }
    let rest = bytes;
    // At shutdown a full non-blocking pipe gets a second, in short sleeps, to take the rest.
    for (let waited = 0; rest.length > 0; ) {
      try {
        rest = rest.subarray(writeSync(this.sink, rest));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN' || waited >= 1000) return; // stdout is gone or stuck
        Atomics.wait(SLEEPER, 0, 0, RETRY_MS);
        waited += RETRY_MS;
      }
    }
  }
}

/** Something to wait on for a synchronous sleep (Atomics.wait never wakes early here: nobody notifies it). */
const SLEEPER = new Int32Array(new SharedArrayBuffer(4));
