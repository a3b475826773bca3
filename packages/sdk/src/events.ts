// A small Server-Sent Events client over fetch (no dependencies): connects, parses `id:` and `data:` lines, sends
// Last-Event-ID when reconnecting, reconnects with a short backoff (100 ms doubling to 1 s, so a dropped stream is back
// within about a second of the server returning), and treats a stream silent for `idleTimeoutMs` as dropped.
import { TollgateHttpError } from './errors.ts';

export interface EventStreamOptions {
  url: string;
  authorization: string;
  idleTimeoutMs: number;
  /** Parsed `data` of each event; `{type: "connected"}` when a connection without a Last-Event-ID opens. */
  onEvent: (data: unknown) => void;
  onError: (error: unknown) => void;
}

const MAX_BACKOFF_MS = 1000;

export class EventStream {
  connected = false;
  private lastEventId: string | null = null;
  private controller: AbortController | null = null;
  private stopped = false;
  private backoffMs = 100;
  private idleTimer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;

  constructor(private readonly options: EventStreamOptions) {}

  start(): void {
    void this.connect();
  }

  stop(): void {
    this.stopped = true;
    this.connected = false;
    this.controller?.abort();
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
  }

  private touch(): void {
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.controller?.abort(new Error('events stream idle')), this.options.idleTimeoutMs);
    this.idleTimer.unref();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const controller = new AbortController();
    this.controller = controller;
    try {
      const headers: Record<string, string> = { authorization: this.options.authorization, accept: 'text/event-stream' };
      if (this.lastEventId !== null) headers['last-event-id'] = this.lastEventId;
      this.touch();
      const response = await fetch(this.options.url, { headers, signal: controller.signal });
      if (response.status !== 200 || response.body === null) {
        await response.body?.cancel();
        throw new TollgateHttpError(response.status, null, `the events stream answered HTTP ${response.status}`);
      }
      // Without a Last-Event-ID nothing can be replayed: whatever was cached before is suspect.
      if (this.lastEventId === null) this.options.onEvent({ type: 'connected' });
      this.connected = true;
      this.backoffMs = 100;
      await this.read(response.body);
    } catch (error) {
      if (!this.stopped) this.options.onError(error);
    } finally {
      this.connected = false;
      if (this.idleTimer !== null) clearTimeout(this.idleTimer);
      this.scheduleReconnect();
    }
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    let data: string[] = [];
    let id: string | null = null;
    for await (const chunk of body) {
      this.touch();
      buffer += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = buffer.indexOf('\n')) !== -1) {
        const line = buffer.slice(0, newline).replace(/\r$/, '');
        buffer = buffer.slice(newline + 1);
        if (line === '') {
          if (id !== null) this.lastEventId = id;
          if (data.length > 0) this.dispatch(data.join('\n'));
          data = [];
          id = null;
        } else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        else if (line.startsWith('id:')) id = line.slice(3).trim();
        // comments (":") and other fields are ignored
      }
    }
    throw new Error('events stream ended');
  }

  private dispatch(text: string): void {
    try {
      this.options.onEvent(JSON.parse(text));
    } catch (error) {
      this.options.onError(error);
    }
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retryTimer !== null) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.connect();
    }, this.backoffMs);
    this.retryTimer.unref();
    this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
  }
}
