// Request body parsers: JSON objects, urlencoded and multipart form fields with bracket nesting
// (`config[length]=32` → {config: {length: "32"}}). Anything unreadable is a 400 in the envelope.
import { Busboy } from '@fastify/busboy';
import type { FastifyInstance } from 'fastify';
import qs from 'qs';
import { errors } from './errors.ts';

const QS_OPTIONS = { depth: 5, arrayLimit: 100, parameterLimit: 1000, allowPrototypes: false } as const;

export function parseNestedForm(encoded: string): Record<string, unknown> {
  return qs.parse(encoded, QS_OPTIONS);
}

export function registerBodyParsers(app: FastifyInstance): void {
  app.removeContentTypeParser(['application/json', 'text/plain']);

  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, {});
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return done(errors.badRequest('The request body is not valid JSON'), undefined);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return done(errors.badRequest('The JSON body must be an object'), undefined);
    }
    done(null, parsed);
  });

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, parseNestedForm(typeof body === 'string' ? body : body.toString('utf8')));
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
      else done(null, parseNestedForm(fields.toString()));
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
