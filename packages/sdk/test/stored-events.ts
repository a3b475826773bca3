// Reads what a Tollgate process stored in usage_events, straight from its SQLite file (read-only), so the tests judge
// "counted once" by the rows themselves, not by what the SDK believes.
import Database from 'better-sqlite3';
import type { TollgateProcess } from './server.ts';

export interface StoredEvent {
  event_id: string;
  meter: string;
  value: number | null;
  timestamp: string;
  properties: unknown;
}

export function storedEvents(server: TollgateProcess, orderId: number): StoredEvent[] {
  const db = new Database(server.databaseFile, { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare('SELECT event_id, meter, value, timestamp, properties FROM usage_events WHERE order_id = ? ORDER BY received_at, event_id')
      .all(orderId) as Array<Omit<StoredEvent, 'properties'> & { properties: string | null }>;
    return rows.map((row) => ({ ...row, properties: row.properties === null ? null : (JSON.parse(row.properties) as unknown) }));
  } finally {
    db.close();
  }
}
