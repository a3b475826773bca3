// What the API answers for a thrown error (platform/errors.ts asApiError): a transaction PostgreSQL undid for meeting
// another — a deadlock (40P01) or a serialization failure (40001) — is the 503 "send it again" in the envelope, not a
// 500; any other database error stays a fault (null: the caller answers 500 and logs it).
import { describe, expect, it } from 'vitest';
import { asApiError, envelopeOf, errors } from '../../src/platform/errors.ts';

/** An error shaped as node-postgres throws them. */
const pgError = (code: string) => Object.assign(new Error(`pg ${code}`), { code, severity: 'ERROR' });

describe('asApiError', () => {
  it('answers a deadlock or a serialization failure with 503 "send it again"', () => {
    for (const code of ['40P01', '40001']) {
      const answer = asApiError(pgError(code));
      expect(answer?.status).toBe(503);
      expect(envelopeOf(answer!)).toEqual({ result: null, error: { code: 503, message: 'The request met another change of the same records at the same moment and was undone: send it again' } });
    }
  });

  it('leaves other database errors and plain errors to the 500 path, and API errors as they are', () => {
    expect(asApiError(pgError('23505'))).toBeNull();
    expect(asApiError(pgError('57014'))).toBeNull();
    expect(asApiError(new Error('boom'))).toBeNull();
    const conflict = errors.conflict('taken');
    expect(asApiError(conflict)).toBe(conflict);
  });
});
