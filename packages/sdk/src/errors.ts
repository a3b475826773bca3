// The error the SDK hands to onError when Tollgate answers something else than 200.

/** Tollgate answered HTTP `status`; `detail` is the envelope's error message (never holds a key or the token). */
export class TollgateHttpError extends Error {
  constructor(
    readonly status: number,
    readonly retryAfter: number | null,
    readonly detail: string,
  ) {
    super(`Tollgate answered HTTP ${status}${detail === '' ? '' : `: ${detail}`}`);
    this.name = 'TollgateHttpError';
  }
}
