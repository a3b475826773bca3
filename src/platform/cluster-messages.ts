// The messages a cluster's workers and primary exchange over node:cluster's IPC channel. Keys never travel: key
// changes are announced by their HMACs, counters by their policy:subject names.
import type { CounterBatchItem } from './counters/batched.ts';
import type { Hit } from './counters/store.ts';

/** A worker → primary → every other worker: these key hashes changed. */
export interface InvalidateMessage {
  t: 'tollgate:invalidate';
  payload: string;
}

/** A worker → primary: add these hits to the shared counters (`id` pairs the answer with its question). */
export interface CountersRequest {
  t: 'tollgate:counters';
  id: number;
  items: CounterBatchItem[];
}

/** Primary → the asking worker: the new totals, in the order of the request's items. */
export interface CountersReply {
  t: 'tollgate:counters-reply';
  id: number;
  hits: Hit[];
}

export type ClusterMessage = InvalidateMessage | CountersRequest | CountersReply;

export function isClusterMessage(value: unknown): value is ClusterMessage {
  return typeof value === 'object' && value !== null && typeof (value as { t?: unknown }).t === 'string' && (value as { t: string }).t.startsWith('tollgate:');
}
