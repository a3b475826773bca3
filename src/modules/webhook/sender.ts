// One webhook POST over node:http(s): signed per Standard Webhooks, redirects not followed (a 3xx is just a status),
// one deadline for the whole exchange, and — unless private receivers are allowed — the socket connects only to an
// address checked at send time (address.ts).
import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { AddressRefused, checkedAddresses, hostOf, pinnedLookup } from './address.ts';

/** The signature of Standard Webhooks: base64 HMAC-SHA256 over "<id>.<timestamp>.<body>", keyed with the secret's bytes. */
export function sign(secret: string, messageId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${messageId}.${timestamp}.${body}`).digest('base64')}`;
}

export interface SendResult {
  /** The receiver's HTTP status, or null when there was none (refused, unreachable, timed out). */
  statusCode: number | null;
  durationMs: number;
  /** What went wrong, in one line, when there was no status. */
  error: string | null;
  /** The address was refused by the private-address rule (not worth retrying). */
  refused: boolean;
}

export interface SendOptions {
  url: string;
  secret: string;
  messageId: string;
  body: string;
  timeoutMs: number;
  allowPrivate: boolean;
}

export async function send(options: SendOptions): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const url = new URL(options.url);
  const host = hostOf(url);
  try {
    // An address given literally never reaches the lookup below (sockets skip it for IPs): check it here. A name is
    // resolved and checked by that lookup, whose answer is the one the socket connects to.
    if (!options.allowPrivate && isIP(host) !== 0) await checkedAddresses(host);
  } catch (error) {
    if (error instanceof AddressRefused) return { statusCode: null, durationMs: elapsed(), error: `refused: ${error.message}`, refused: true };
    throw error;
  }
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(options.body)),
    'user-agent': 'Tollgate-Webhooks/1',
    'webhook-id': options.messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': sign(options.secret, options.messageId, timestamp, options.body),
  };
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const finish = (result: Omit<SendResult, 'durationMs' | 'refused'> & { refused?: boolean }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ refused: false, ...result, durationMs: elapsed() });
    };
    const request = transport.request(
      {
        method: 'POST',
        protocol: url.protocol,
        hostname: host,
        port: url.port === '' ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        headers,
        // No pooled sockets: each delivery connects (and checks) afresh.
        agent: false,
        ...(!options.allowPrivate && { lookup: pinnedLookup as unknown as typeof import('node:dns').lookup }),
      },
      (response) => {
        // Only the status matters; the body is read and dropped so the socket closes cleanly.
        response.resume();
        response.on('error', () => undefined);
        finish({ statusCode: response.statusCode ?? null, error: null });
      },
    );
    const timer = setTimeout(() => {
      request.destroy(new Error(`timed out after ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    request.on('error', (error: Error) => {
      if (error instanceof AddressRefused) finish({ statusCode: null, error: `refused: ${error.message}`, refused: true });
      else finish({ statusCode: null, error: error.message.replace(/\s+/g, ' ').slice(0, 300) || error.name });
    });
    request.end(options.body);
  });
}
