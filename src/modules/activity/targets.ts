// What an admin action changes, for its audit entry: the target (type and id) and where to read it before and after,
// so the entry can say which fields changed from what to what. Read from the action's own transaction, which is also
// where the change happens (db/ambient.ts). An action this table does not know still gets an entry: its target is its
// module and `id` parameter, and its changes are the parameters it was given (secrets as "changed" only).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

type Row = Record<string, unknown>;

/** How to read a target: a table, the column the id is matched against, and the parameter that holds the id. */
interface Rule {
  type: string;
  table?: keyof Database;
  /** Column matched (default `id`); several rows may match (the keys of an order). */
  column?: string;
  /** Parameter holding the id (default `id`, then `<type>_id`). */
  param?: string;
  /** The target is the caller's own staff row (admin/profile/…). */
  self?: boolean;
}

/** Per module: rules chosen by the action's name prefix, first match wins; `''` is the module's default. */
const RULES: Record<string, Array<[prefix: string, rule: Rule]>> = {
  system: [['settings_update', { type: 'setting' }]],
  staff: [
    ['group_', { type: 'staff_group', table: 'admin_groups' }],
    ['verifier_', { type: 'verifier', table: 'staff' }],
    ['', { type: 'staff', table: 'staff' }],
  ],
  profile: [['', { type: 'staff', table: 'staff', self: true }]],
  client: [
    ['balance_delete', { type: 'credit_entry', table: 'credit_entries' }],
    ['balance_', { type: 'client' }],
    ['', { type: 'client', table: 'clients' }],
  ],
  product: [
    ['promo_', { type: 'promo', table: 'promos' }],
    ['', { type: 'product', table: 'products' }],
  ],
  order: [['', { type: 'order', table: 'orders' }]],
  invoice: [
    ['tax_', { type: 'tax', table: 'taxes' }],
    ['credit_note_', { type: 'invoice', table: 'invoices', param: 'invoice_id' }],
    ['pay_with_credits', { type: 'invoice', table: 'invoices' }],
    ['', { type: 'invoice', table: 'invoices' }],
  ],
  credit: [['pack_', { type: 'credit_pack', table: 'credit_packs' }]],
  serviceapikey: [['', { type: 'api_key', table: 'api_keys' }]],
  email: [
    ['template_', { type: 'email_template', table: 'email_templates', column: 'code', param: 'code' }],
    ['', { type: 'email', table: 'emails' }],
  ],
  webhook: [
    ['delivery_', { type: 'webhook_delivery', table: 'webhook_deliveries' }],
    ['', { type: 'webhook', table: 'webhooks' }],
  ],
  currency: [['', { type: 'currency', table: 'currencies', column: 'code', param: 'code' }]],
};

export interface Target {
  type: string;
  id: string | null;
  rule: Rule;
}

function ruleOf(module: string, action: string): Rule {
  for (const [prefix, rule] of RULES[module] ?? []) if (action.startsWith(prefix)) return rule;
  return { type: module };
}

const asId = (value: unknown): string | null => (typeof value === 'number' || (typeof value === 'string' && value !== '') ? String(value) : null);

/** The target as the parameters name it (an update, a delete); a create learns its id from the result. */
export function targetBefore(module: string, action: string, params: Row, selfId: number): Target {
  const rule = ruleOf(module, action);
  if (rule.self === true) return { type: rule.type, id: String(selfId), rule };
  const named = rule.param ?? 'id';
  const id = asId(params[named]) ?? asId(params[`${rule.type}_id`]);
  // A key named by its order (serviceapikey/reset {order_id}): the order's keys are the target's rows.
  if (id === null && rule.table === 'api_keys' && asId(params.order_id) !== null) {
    return { type: 'order', id: asId(params.order_id), rule: { ...rule, type: 'order', column: 'order_id' } };
  }
  return { type: rule.type, id, rule };
}

/** A create's target: the id its result names (a number, or `{id}`), when the parameters named none. */
export function targetAfter(target: Target, result: unknown): Target {
  if (target.id !== null) return target;
  const id = typeof result === 'number' ? result : typeof result === 'object' && result !== null ? (result as Row).id : undefined;
  return { ...target, id: asId(id) };
}

/**
 * The target's rows as one flat record (`column` → value; several rows as `#<id>.column`), or null when it has no
 * table or does not exist (before a create, after a delete).
 */
export async function readTarget(trx: Kysely<Database>, target: Target): Promise<Row | null> {
  const { table, column = 'id' } = target.rule;
  if (table === undefined || target.id === null) return null;
  const id = column === 'id' || column === 'order_id' ? Number(target.id) : target.id;
  if (typeof id === 'number' && !Number.isSafeInteger(id)) return null;
  // Dynamic table and column: the rules above name real ones; Kysely cannot type a name chosen at run time.
  const query = (trx as unknown as Kysely<Record<string, Row>>).selectFrom(table).selectAll().where(column, '=', id);
  const rows = (await (column === 'order_id' ? query.orderBy('id') : query).limit(50).execute()) as Row[];
  if (rows.length === 0) return null;
  if (rows.length === 1 && column !== 'order_id') return rows[0]!;
  const flat: Row = {};
  for (const row of rows) for (const [key, value] of Object.entries(row)) flat[`#${String(row.id)}.${key}`] = value;
  return flat;
}
