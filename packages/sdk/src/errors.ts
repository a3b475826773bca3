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

/** Tollgate refused some tracked events (one error per rejection code in an answer); they are not sent again. */
export class TollgateEventRejection extends Error {
  constructor(
    /** The ingest rejection code, e.g. UNKNOWN_METER, UNKNOWN_KEY, VALUE_REQUIRED (docs/metering.md). */
    readonly code: string,
    /** The refused events, by the id track() gave them and their meter. */
    readonly events: ReadonlyArray<{ id: string; meter: string }>,
    detail: string,
  ) {
    super(`Tollgate rejected ${events.length} usage event${events.length === 1 ? '' : 's'} with ${code}${detail === '' ? '' : `: ${detail}`}`);
    this.name = 'TollgateEventRejection';
  }
}

/** Tracked events that will never be sent: the queue was full (the oldest go), or close() could not send them. */
export class TollgateEventsDropped extends Error {
  constructor(
    readonly count: number,
    reason: string,
  ) {
    super(`${count} usage event${count === 1 ? '' : 's'} dropped: ${reason}`);
    this.name = 'TollgateEventsDropped';
  }
}
