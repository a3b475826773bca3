// The access log (ACCESS_LOG=true, CONTRACT §13): one JSON line per request, at a cost the key check can afford.
// pino over SonicBoom cost 3–6 µs a line (serialising an object, measuring every string's UTF-8 length), a quarter of
// a check. This writer builds no string per line: it copies the line's bytes straight into a chunk, a Buffer written
// as is. What repeats from one request to the next is kept as bytes (the time's text, patched each millisecond;
// method, route and status), and only the duration's digits and the address are written per line. Counted by
// `npm run bench -- instructions`, the log adds 3% to a check's instructions; a template string with toISOString's
// time stamp added 11%.
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

/** The largest duration written, in hundredths of a millisecond (over three years); a longer one is written as this. */
const MAX_HUNDREDTHS = 1e13 - 1;
/** Room a duration takes at most: "99999999999.99". */
const DURATION_ROOM = 14;

/**
 * Writes milliseconds with two decimals ("0.41", "12.05", "3.00") into `bytes` at `at`, digit by digit, and returns
 * where it ended: no number is turned into text (V8 turning a fraction into text costs as much as the rest of a line).
 * A duration that is not a number or is negative is written as 0.00 (a duration always is one, and the line must stay
 * JSON).
 */
export function writeHundredths(bytes: Uint8Array, at: number, ms: number): number {
  const rounded = Math.round(ms * 100);
  const total = rounded >= 0 ? Math.min(rounded, MAX_HUNDREDTHS) : 0;
  const cents = total % 100;
  let whole = (total - cents) / 100;
  let digits = 1;
  for (let power = 10; power <= whole; power *= 10) digits++;
  for (let i = at + digits - 1; i >= at; i--) {
    const digit = whole % 10;
    bytes[i] = ZERO + digit;
    whole = (whole - digit) / 10;
  }
  at += digits;
  bytes[at] = DOT;
  bytes[at + 1] = ZERO + ((cents - (cents % 10)) / 10);
  bytes[at + 2] = ZERO + (cents % 10);
  return at + 3;
}

const ZERO = 48;
const DOT = 46;

/** The line's end: after the duration, the address between these. */
const BEFORE_ADDRESS = Buffer.from(',"ip":"', 'latin1');
const AFTER_ADDRESS = Buffer.from('"}\n', 'latin1');
/** Method, route and status combinations kept as bytes (the server's routes × methods × statuses; a bound all the same). */
const MAX_MIDDLES = 4096;

/** The line's start, `{"time":"…","method":"`, with toISOString's longest time ("+275760-09-13T00:00:00.000Z"). */
const HEAD_ROOM = '{"time":"+275760-09-13T00:00:00.000Z","method":"'.length;
/** Where the milliseconds' three digits end, counted from the head's end: `.007Z","method":"`. */
const MILLIS_FROM_END = '7Z","method":"'.length;

/**
 * The line's start for a time, `{"time":"2026-11-23T12:15:44.007Z","method":"`, as bytes. `new Date(ms).toISOString()`
 * costs about 7,000 instructions (callgrind), more than the rest of the line: it runs here once per second seen, and a
 * new millisecond only changes the three digits in place.
 */
export class LineHead {
  /**
   * The text, then unused room. Off the V8 heap (allocUnsafeSlow), so that copying from it is a plain memory copy.
   * It is never replaced, only written in: optimised code that reads it is not thrown away each second.
   */
  readonly bytes = Buffer.allocUnsafeSlow(HEAD_ROOM).fill(0x20);
  /** How much of `bytes` is the text. */
  length = 0;
  private ms = Number.NaN;
  private second = Number.NaN;

  /** Makes `bytes` (up to `length`) the text for `ms`. */
  at(ms: number): void {
    if (ms === this.ms) return;
    const millis = ms % 1000;
    const second = ms - millis;
    if (second !== this.second || !(millis >= 0)) {
      // A time before 1970 or not whole (Date.now gives neither) is written by Date each time, not patched.
      this.second = millis >= 0 && Number.isInteger(ms) ? second : Number.NaN;
      this.length = this.bytes.write(`{"time":"${new Date(ms).toISOString()}","method":"`, 0, 'latin1');
    } else {
      const last = this.length - MILLIS_FROM_END;
      this.bytes[last] = ZERO + (millis % 10);
      this.bytes[last - 1] = ZERO + (Math.floor(millis / 10) % 10);
      this.bytes[last - 2] = ZERO + Math.floor(millis / 100);
    }
    this.ms = ms;
  }
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
  private readonly head = new LineHead();
  /** `POST","route":"/api/…","status":200,"ms":` as bytes, by method, route and status; the last one at hand. */
  private readonly middles = new Map<string, Buffer>();
  private middle: Buffer = Buffer.alloc(0);
  private lastMethod = '';
  private lastRoute = '';
  private lastStatus = 0;
  /** The last address seen and its form in the line: a client's requests come one after another. */
  private lastIp = '';
  private address = '-';
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

  /** Adds a request's line. Every argument is ASCII: a method, a route template, a number, an address (checked). */
  record(method: string, route: string, status: number, ms: number, ip: string): void {
    if (this.closed) return;
    const head = this.head;
    head.at(Date.now());
    if (method !== this.lastMethod || route !== this.lastRoute || status !== this.lastStatus) this.describe(method, route, status);
    if (ip !== this.lastIp) {
      this.lastIp = ip;
      this.address = safeAddress(ip);
    }
    const address = this.address;
    // The head is copied whole (its unused room too, overwritten by what follows): one copy of a fixed size.
    const room = HEAD_ROOM + this.middle.length + DURATION_ROOM + BEFORE_ADDRESS.length + address.length + AFTER_ADDRESS.length;
    if (this.used + room > this.chunkBytes) {
      // A line no chunk can hold (a route template of kilobytes: none of the server's) is counted as dropped.
      if (room > this.chunkBytes) {
        this.dropped++;
        return;
      }
      this.seal();
      // Out at once rather than at the next flush: a written chunk's buffer then comes back for the one after.
      this.pump();
    }
    if (this.queue.length >= this.maxQueued) {
      this.dropped++;
      return;
    }
    const bytes = this.buffer;
    let at = this.used;
    bytes.set(head.bytes, at);
    at += head.length;
    bytes.set(this.middle, at);
    at = writeHundredths(bytes, at + this.middle.length, ms);
    bytes.set(BEFORE_ADDRESS, at);
    at += BEFORE_ADDRESS.length;
    // An address is at most 45 characters, all ASCII (safeAddress): copied one by one, no string is encoded.
    for (let i = 0; i < address.length; i++) bytes[at + i] = address.charCodeAt(i);
    at += address.length;
    bytes.set(AFTER_ADDRESS, at);
    this.used = at + AFTER_ADDRESS.length;
    this.lines++;
  }

  /** The method, route and status part of the line, from the kept ones or made (once per combination). */
  private describe(method: string, route: string, status: number): void {
    this.lastMethod = method;
    this.lastRoute = route;
    this.lastStatus = status;
    const key = `${status} ${method} ${route}`;
    let middle = this.middles.get(key);
    if (middle === undefined) {
      middle = Buffer.from(`${method}","route":${JSON.stringify(route)},"status":${status},"ms":`, 'latin1');
      if (this.middles.size < MAX_MIDDLES) this.middles.set(key, middle);
    }
    this.middle = middle;
  }

  /** Hands the current chunk to the writer now (and, every FLUSH_MS, by itself). */
  flush(): void {
    if (this.used > 0) this.seal();
    this.pump();
  }

  /** Writes everything still held, synchronously, once the write in flight has ended; then records nothing more. */
  /** No write under way and nothing sealed waiting for one: what a test waits on instead of a guess at the disk's pace. */
  get idle(): boolean {
    return !this.writing && this.queue.length === 0;
  }

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
