// Request body parsers: JSON objects, urlencoded and multipart form fields with bracket nesting
// (`config[length]=32` → {config: {length: "32"}}). Anything unreadable is a 400 in the envelope.
import { Busboy } from '@fastify/busboy';
import type { FastifyInstance } from 'fastify';
import qs from 'qs';
import { jsonTooDeep, MAX_NESTING } from './depth.ts';
import { errors } from '../platform/errors.ts';

// `strictDepth` makes qs throw past MAX_NESTING brackets instead of keeping the rest as a literal key, so a form
// nests exactly as deep as JSON may (depth.ts).
const QS_OPTIONS = { depth: MAX_NESTING, strictDepth: true, arrayLimit: 100, parameterLimit: 1000, allowPrototypes: false } as const;

const tooDeep = (what: string) => errors.badRequest(`The ${what} nests deeper than ${MAX_NESTING} levels`);

/** Parses bracketed form or query names into nested objects; throws 400 past MAX_NESTING levels. */
export function parseNestedForm(encoded: string, what = 'form data'): Record<string, unknown> {
  try {
    return qs.parse(encoded, QS_OPTIONS);
  } catch (error) {
    if (error instanceof RangeError) throw tooDeep(what);
    throw error;
  }
}

/**
 * The query string of a request. Fastify's router calls this outside any error handling, so a throw here would not
 * become an envelope: a query too deep parses to an empty object that `isRefusedQuery` recognises instead.
 */
const refusedQueries = new WeakSet<object>();

export function parseQuery(text: string): Record<string, unknown> {
  try {
    return parseNestedForm(text, 'query string');
  } catch {
    const refused = {};
    refusedQueries.add(refused);
    return refused;
  }
}

export function isRefusedQuery(query: unknown): boolean {
  return typeof query === 'object' && query !== null && refusedQueries.has(query);
}

export const queryTooDeep = (): Error => tooDeep('query string');

/**
 * A JSON request body as the parameters object: empty means no parameters; anything but an object, or nesting past
 * MAX_NESTING, is a 400. Shared by Fastify's parser and the direct answers (direct.ts), so both refuse alike.
 */
export function parseJsonObject(text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  // Before JSON.parse and everything after it: the body object itself is one level, its parameters MAX_NESTING.
  if (jsonTooDeep(text, MAX_NESTING + 1)) throw tooDeep('JSON body');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw errors.badRequest('The request body is not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw errors.badRequest('The JSON body must be an object');
  return parsed as Record<string, unknown>;
}

export function registerBodyParsers(app: FastifyInstance): void {
  app.removeContentTypeParser(['application/json', 'text/plain']);

  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    let parsed: Record<string, unknown>;
    try {
      parsed = parseJsonObject(typeof body === 'string' ? body : body.toString('utf8'));
    } catch (error) {
      return done(error as Error, undefined);
    }
    done(null, parsed);
  });

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    let parsed: Record<string, unknown>;
    try {
      parsed = parseNestedForm(typeof body === 'string' ? body : body.toString('utf8'));
    } catch (error) {
      return done(error as Error, undefined);
    }
    done(null, parsed);
  });

  app.addContentTypeParser('multipart/form-data', (request, payload, done) => {
    // Fields only: file parts are drained and ignored. The fields are re-encoded so they nest like a urlencoded form.
    // A stream parser is not covered by Fastify's body limit, so the bytes are counted here.
    const limit = request.routeOptions.bodyLimit ?? request.server.initialConfig.bodyLimit ?? 1_048_576;
    if (Number(request.headers['content-length']) > limit) {
      payload.resume();
      done(errors.payloadTooLarge(limit), undefined);
      return;
    }
    const fields = new URLSearchParams();
    let parser: InstanceType<typeof Busboy>;
    try {
      parser = new Busboy({
        headers: request.headers as { 'content-type': string },
        limits: { fields: 1000, fieldSize: limit },
      });
    } catch {
      done(errors.badRequest('The multipart form data could not be read'), undefined);
      return;
    }
    let finished = false;
    const finish = (error: Error | null): void => {
      if (finished) return;
      finished = true;
      if (error !== null) done(error, undefined);
      else {
        let parsed: Record<string, unknown>;
        try {
          parsed = parseNestedForm(fields.toString(), 'multipart form data');
        } catch (parseError) {
          done(parseError as Error, undefined);
          return;
        }
        done(null, parsed);
      }
    };
    parser.on('field', (name: string, value: string) => fields.append(name, value));
    parser.on('file', (_name: string, stream: NodeJS.ReadableStream) => stream.resume());
    parser.on('error', () => finish(errors.badRequest('The multipart form data could not be read')));
    parser.on('finish', () => finish(null));
    payload.on('error', (error: Error) => finish(error));
    let received = 0;
    payload.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received <= limit || finished) return;
      payload.unpipe(parser);
      finish(errors.payloadTooLarge(limit));
    });
    payload.pipe(parser);
  });

  // Any other content type cannot carry parameters we understand.
  app.addContentTypeParser('*', (request, _payload, done) => {
    done(errors.badRequest(`Content type "${request.headers['content-type'] ?? ''}" is not supported; send JSON or form data`), undefined);
  });
}
