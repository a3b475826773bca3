// A real SMTP server for the e-mail tests (smtp-server on 127.0.0.1, an ephemeral port), whose behaviour a test
// switches: accept, be slow (answer after the client has given up), refuse the recipient, drop the connection in the
// middle of the message — or be down altogether (stop(), then start() again on the same port). Accepted messages are
// parsed with mailparser, with the SMTP envelope beside them.
import type { Socket } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export type SmtpMode = 'accept' | 'slow' | 'refuse' | 'drop';

export interface ReceivedMail {
  parsed: ParsedMail;
  raw: string;
  envelope: { from: string; to: string[] };
}

export class TestSmtp {
  mode: SmtpMode = 'accept';
  /** How long the `slow` mode waits before answering the message. */
  slowMs = 2000;
  /**
   * When set, every message after this many is recorded as received but not answered until release(): the sender
   * has it on the wire, claimed and not recorded as sent (the crash tests kill it in exactly that state).
   */
  holdAfter: number | null = null;
  readonly received: ReceivedMail[] = [];
  /** The credentials clients logged in with (AUTH is optional). */
  readonly logins: Array<{ user: string; pass: string }> = [];
  private held: Array<() => void> = [];
  /** Connections that delivered part of a message before `drop` cut them. */
  dropped = 0;
  port = 0;
  private server: SMTPServer | null = null;
  private readonly sockets = new Map<number, Socket>();
  private waiters: Array<() => void> = [];

  async start(): Promise<void> {
    const server = new SMTPServer({
      authOptional: true,
      // Logins are accepted and recorded (the settings tests check which password a client sent), over plain text.
      allowInsecureAuth: true,
      onAuth: (auth, _session, callback) => {
        this.logins.push({ user: auth.username ?? '', pass: auth.password ?? '' });
        callback(null, { user: auth.username });
      },
      disabledCommands: ['STARTTLS'],
      logger: false,
      // No reverse DNS lookup of each client: there is no resolver here, and waiting for it made each message slow.
      disableReverseLookup: true,
      onRcptTo: (address, _session, callback) => {
        if (this.mode === 'refuse') {
          const error = new Error(`<${address.address}>: Recipient address rejected`) as Error & { responseCode: number };
          error.responseCode = 550;
          callback(error);
          return;
        }
        callback();
      },
      onData: (stream, session, callback) => {
        const mode = this.mode;
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          if (mode === 'drop' && chunks.length === 1) {
            this.dropped += 1;
            this.sockets.get(session.remotePort)?.destroy();
          }
        });
        stream.on('end', () => {
          if (mode === 'drop') return;
          const finish = (): void => {
            const raw = Buffer.concat(chunks).toString('utf8');
            const envelope = {
              from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
              to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
            };
            void simpleParser(raw).then((parsed) => {
              const hold = this.holdAfter !== null && this.received.length >= this.holdAfter;
              this.received.push({ parsed, raw, envelope });
              for (const wake of this.waiters.splice(0)) wake();
              if (hold) this.held.push(() => callback());
              else callback();
            }, callback);
          };
          if (mode === 'slow') setTimeout(finish, this.slowMs);
          else finish();
        });
      },
    });
    server.on('error', () => {
      // Dropped connections raise socket errors on the server side: expected in the `drop` mode.
    });
    server.server.on('connection', (socket: Socket) => {
      const port = socket.remotePort ?? 0;
      this.sockets.set(port, socket);
      socket.once('close', () => this.sockets.delete(port));
    });
    await new Promise<void>((resolve, reject) => {
      server.server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    const address = server.server.address();
    if (address === null || typeof address === 'string') throw new Error('the SMTP server has no port');
    this.port = address.port;
    this.server = server;
  }

  /** Closes the server and every open connection: the port then refuses connections until start(). */
  async stop(): Promise<void> {
    const server = this.server;
    if (server === null) return;
    this.server = null;
    for (const socket of this.sockets.values()) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Stops holding and answers the messages held so far (their senders may be gone; that is harmless). */
  release(): void {
    this.holdAfter = null;
    for (const answer of this.held.splice(0)) answer();
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  /** Resolves once at least `count` messages have arrived (or rejects after `timeoutMs`). */
  async waitFor(count: number, timeoutMs = 10_000): Promise<ReceivedMail[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`expected ${count} messages, got ${this.received.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.received;
  }
}
