// The global connection cap (issue 20, M6). Under `ulimit -n 1024`, 1,100 slow-body connections from ten addresses,
// each under MAX_CONNECTIONS_PER_IP, used up every file descriptor and left /healthz unanswered until the request
// timeout cut them. So the process holds at most MAX_CONNECTIONS (below its descriptor limit, descriptor-limit.ts),
// and keeps the last tenth of them as a reserve for new requests: once a new connection reaches into the reserve, an
// older connection that is doing nothing useful is closed to make room for it, the one idle the longest first
// (a keep-alive connection between requests), else the oldest slow one (headers or body still arriving). A request
// that has fully arrived and is being answered (an events stream too) is never closed. Under pressure, more than half
// of MAX_CONNECTIONS open, slow requests and idle connections are also cut after a fifth of REQUEST_TIMEOUT_MS
// instead of the whole of it. A new connection is refused (closed at once) only when all the others are busy
// answering.
//
// The only per-request work is `seen` (a WeakMap lookup and three writes), called from the request listener app.ts
// already puts in front of Fastify.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface PressureOptions {
  /** Most connections open at once (MAX_CONNECTIONS). */
  max: number;
  /** How long a connection may sit idle or take to send its request while more than half of `max` are open. */
  pressureTimeoutMs: number;
  /** How often that is checked (tests shorten it). */
  sweepMs?: number;
  /** Told once when a wave begins to close connections, and when it is over. */
  warn?: (fields: Record<string, unknown>, message: string) => void;
}

export interface ConnectionPressure {
  /** Every request on the server, before it is answered: which connection is busy. */
  seen: (request: IncomingMessage, response: ServerResponse) => void;
  /** Connections open, closed to make room (`shed`), and refused since the start: for tests and metrics. */
  stats(): { open: number; shed: number; refused: number };
  stop(): void;
}

/** One open connection and what it is doing. */
class Tracked {
  request: IncomingMessage | null = null;
  response: ServerResponse | null = null;
  /** The request seen at the last sweep under pressure (undefined: not looked at yet), and for how many sweeps since. */
  watched: IncomingMessage | null | undefined = undefined;
  stuckSweeps = 0;

  constructor(
    readonly socket: Socket,
    /** A sequence number taken when the connection opened and again at each request: smaller is longer ago. */
    public since: number,
  ) {}

  /** busy: a request fully arrived and not yet answered; idle: between requests; slow: headers or body under way. */
  get doing(): 'busy' | 'idle' | 'slow' {
    const { request, response } = this;
    if (request === null || !request.complete) return 'slow';
    return response !== null && !response.writableFinished ? 'busy' : 'idle';
  }
}

/** The reserve kept for new requests: a tenth of the cap, at least one connection. */
export function reserveOf(max: number): number {
  return Math.max(1, Math.ceil(max / 10));
}

export function limitConnections(server: Pick<Server, 'on'>, options: PressureOptions): ConnectionPressure {
  const { max, pressureTimeoutMs, warn } = options;
  const sweepMs = options.sweepMs ?? 1000;
  const threshold = max - reserveOf(max);
  const open = new Set<Tracked>();
  // Keyed by the socket a request arrives on: the TCP socket, or over TLS the TLS socket wrapping it (secureConnection).
  const bySocket = new WeakMap<object, Tracked>();
  let sequence = 0;
  let shed = 0;
  let refused = 0;
  let shedding = false;
  let calm = true;

  function close(tracked: Tracked): void {
    open.delete(tracked);
    shed++;
    tracked.socket.destroy();
  }

  /** Closes the connection idle the longest, else the oldest slow one; false when every other one is busy. */
  function shedOne(except: Tracked): boolean {
    let idle: Tracked | null = null;
    let slow: Tracked | null = null;
    for (const tracked of open) {
      if (tracked === except) continue;
      const doing = tracked.doing;
      if (doing === 'idle' && (idle === null || tracked.since < idle.since)) idle = tracked;
      else if (doing === 'slow' && (slow === null || tracked.since < slow.since)) slow = tracked;
    }
    const victim = idle ?? slow;
    if (victim === null) return false;
    close(victim);
    return true;
  }

  server.on('connection', (socket: Socket) => {
    // Already closed by the per-address cap (connections.ts), which listens first.
    if (socket.destroyed) return;
    const tracked = new Tracked(socket, ++sequence);
    open.add(tracked);
    bySocket.set(socket, tracked);
    socket.once('close', () => open.delete(tracked));
    if (open.size <= threshold) return;
    if (!shedding) {
      shedding = true;
      warn?.({ open: open.size, max }, 'connection limit: closing idle and slow connections to make room for new ones');
    }
    if (!shedOne(tracked) && open.size > max) {
      open.delete(tracked);
      refused++;
      socket.destroy();
    }
  });
  // Over TLS the requests arrive on a TLS socket wrapping the TCP one: `_parent` is Node's own link between the two
  // (no public one exists). Without it a TLS connection would look slow for ever and be the first one closed.
  server.on('secureConnection', (socket: Socket & { _parent?: Socket }) => {
    // oxlint-disable-next-line no-underscore-dangle -- Node's name for the wrapped TCP socket
    const parent = socket._parent;
    const tracked = parent === undefined ? undefined : bySocket.get(parent);
    if (tracked !== undefined) bySocket.set(socket, tracked);
  });

  /** Under pressure: closes connections idle, or sending one request, for longer than pressureTimeoutMs. */
  function sweep(): void {
    if (open.size * 2 <= max) {
      if (!calm && shedding) warn?.({ open: open.size, max, shed, refused }, 'connection limit: pressure is over');
      calm = true;
      shedding = false;
      return;
    }
    if (calm) {
      // A new wave: what connections did before it does not count against them.
      for (const tracked of open) tracked.watched = undefined;
      calm = false;
    }
    for (const tracked of open) {
      if (tracked.doing === 'busy') {
        tracked.watched = undefined;
        continue;
      }
      if (tracked.watched === tracked.request) tracked.stuckSweeps++;
      else {
        tracked.watched = tracked.request;
        tracked.stuckSweeps = 0;
      }
      // stuckSweeps full sweeps have passed since the connection was first seen in this state.
      if (tracked.stuckSweeps * sweepMs >= pressureTimeoutMs) close(tracked);
    }
  }
  const timer = setInterval(sweep, sweepMs);
  timer.unref();

  return {
    seen: (request, response) => {
      const tracked = bySocket.get(request.socket);
      if (tracked === undefined) return;
      tracked.request = request;
      tracked.response = response;
      tracked.since = ++sequence;
    },
    stats: () => ({ open: open.size, shed, refused }),
    stop: () => clearInterval(timer),
  };
}
