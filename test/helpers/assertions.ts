// Assertions on the API's failure envelope, shared by every test file.
import { expect } from 'vitest';

interface EnvelopeReply {
  status: number;
  body: { result: unknown; error: { message: string; code: number } | null };
}

/** The reply is the envelope of a failure with `code`, answered with HTTP `status` (the same number by default). */
export function expectError(reply: EnvelopeReply, code: number, status: number = code): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.body).toEqual({ result: null, error: { message: expect.any(String), code } });
  expect(reply.body.error!.message.length).toBeGreaterThan(0);
}

/** A 422 whose message names `param`. */
export function expectInvalid(reply: EnvelopeReply, param: string): void {
  expectError(reply, 422, 422);
  expect(reply.body.error!.message, reply.body.error!.message).toContain(`"${param}"`);
}
