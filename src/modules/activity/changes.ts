// The "fields changed" of an audit entry: before → after of the target's columns, or the parameters given when the
// target has no row to compare. A secret's value never enters the log, only that it changed (platform/audit.ts names
// the secret-looking names; the settings catalogue marks secret settings).
import { isSecretName } from '../../platform/audit.ts';

export type Change = { field: string; from: unknown; to: unknown } | { field: string; changed: true };

/** Columns whose change says nothing the entry's time and target do not (a create's id, its creation time). */
const NOISE = new Set(['id', 'created_at', 'updated_at']);
/** Longest text kept per value: a product description or a template body stays readable without filling the log. */
const MAX_TEXT = 500;
/** Most fields kept per entry. */
const MAX_FIELDS = 100;

/** A JSON column (pricing, config) compared and shown as its value; other text as it is, cut at MAX_TEXT. */
function shown(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (typeof value !== 'string') return value ?? null;
  if (/^[[{]/.test(value)) {
    try {
      return JSON.parse(value) as unknown;
    } catch {
      // Not JSON after all: shown as text below.
    }
  }
  return value.length > MAX_TEXT ? `${value.slice(0, MAX_TEXT)}…` : value;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** The last part of a flattened name (`#3.key_hash` → `key_hash`), which says whether it is a secret. */
const baseName = (field: string): string => field.slice(field.lastIndexOf('.') + 1);

/** Fields that differ between two snapshots of a target (either may be null: a create, a delete). */
export function diffRows(before: Record<string, unknown> | null, after: Record<string, unknown> | null, isSecret = isSecretName): Change[] {
  const fields = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  const out: Change[] = [];
  for (const field of fields) {
    if (NOISE.has(baseName(field))) continue;
    const from = before === null ? null : (before[field] ?? null);
    const to = after === null ? null : (after[field] ?? null);
    if (same(from, to)) continue;
    out.push(isSecret(baseName(field)) ? { field, changed: true } : { field, from: shown(from), to: shown(to) });
    if (out.length === MAX_FIELDS) break;
  }
  return out;
}

/** The parameters an action was given, as changes to unknown former values (the target's id left out). */
export function paramChanges(params: Record<string, unknown>, isSecret = isSecretName): Change[] {
  const out: Change[] = [];
  for (const [field, value] of Object.entries(params)) {
    if (field === 'id' || value === undefined) continue;
    out.push(isSecret(field) ? { field, changed: true } : { field, from: null, to: shown(typeof value === 'object' && value !== null ? JSON.stringify(value) : value) });
    if (out.length === MAX_FIELDS) break;
  }
  return out;
}
