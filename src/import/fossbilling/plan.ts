// The whole plan: reads what Tollgate already holds (the mapping table and the values imported records must not
// collide with), then plans every kind in dependency order, so that a record whose parent is skipped is skipped too.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { formatMoney, precisionOf } from '../../lib/money.ts';
import { fossbillingIds } from './ids.ts';
import { planKeys, planOrders, planProducts } from './plan-catalog.ts';
import { planInvoices } from './plan-invoices.ts';
import { planClients, planStaff, planStaffGroups, planTaxes } from './plan-people.ts';
import { KINDS, mappedId, planned, type Kind, type Plan, type Problem, type TollgateState } from './plan-types.ts';
import { toMinor } from './convert.ts';
import type { FbData } from './source.ts';
import { versionOfPatch } from './version.ts';

/** Thrown before anything is written when the two sides cannot be imported into each other at all. */
export class ImportRefused extends Error {}

export async function readTollgateState(db: Kysely<Database>, currency: string, invoicePrefix: string): Promise<TollgateState> {
  const mapped = new Map<Kind, Map<number, { tollgateId: number; fingerprint: string }>>(KINDS.map((kind) => [kind, new Map()]));
  for (const row of await fossbillingIds(db).selectFrom('fossbilling_ids').select(['kind', 'fb_id', 'tollgate_id', 'fingerprint']).execute()) {
    mapped.get(row.kind as Kind)?.set(Number(row.fb_id), { tollgateId: row.tollgate_id, fingerprint: row.fingerprint });
  }
  const byValue = (list: Array<{ id: number; value: string | null }>): Map<string, number> => {
    const out = new Map<string, number>();
    for (const row of list) if (row.value !== null) out.set(row.value, row.id);
    return out;
  };
  return {
    mapped,
    clientEmails: byValue(await db.selectFrom('clients').select(['id', 'email as value']).execute()),
    staffEmails: byValue(await db.selectFrom('staff').select(['id', 'email as value']).execute()),
    productSlugs: byValue(await db.selectFrom('products').select(['id', 'slug as value']).execute()),
    invoiceNumbers: byValue(await db.selectFrom('invoices').select(['id', 'number as value']).where('number', 'is not', null).execute()),
    invoiceHashes: byValue(await db.selectFrom('invoices').select(['id', 'hash as value']).execute()),
    keyHashes: byValue(await db.selectFrom('api_keys').select(['id', 'key_hash as value']).execute()),
    currency,
    precision: precisionOf(currency),
    invoicePrefix,
  };
}

export function buildPlan(data: FbData, state: TollgateState, fingerprintOf: (json: string) => string, keyHashOf: (key: string) => string): Plan {
  if (data.defaultCurrency !== null && data.defaultCurrency !== state.currency) {
    throw new ImportRefused(
      `FOSSBilling's default currency is ${data.defaultCurrency} and this Tollgate's is ${state.currency}: product prices would change meaning. ` +
        `Start Tollgate with CURRENCY=${data.defaultCurrency} (on a new instance) and run the import again.`,
    );
  }
  const problems: Problem[] = [];
  const fp = fingerprintOf;
  const staffGroups = planStaffGroups(data.adminGroups, state, fp);
  const staff = planStaff(data.admins, new Set(data.adminGroups.map((group) => group.id)), state, fp, problems);
  const clients = planClients(data.clients, state, fp, problems);
  const taxes = planTaxes(data.taxes, state, fp);
  const products = planProducts(data.products, data.payments, state, fp, problems);
  const clientIds = new Set(clients.map((client) => client.fbId));
  const productTypes = new Map(products.map((product) => [product.fbId, product.values.type]));
  const orders = planOrders(data.orders, clientIds, productTypes, state, fp, problems);
  const orderIds = new Set(orders.map((order) => order.fbId));
  const keys = planKeys(data.apiKeys, data.orders, orderIds, state, fp, problems).filter((key) => {
    // A key Tollgate already holds for a record not from this import would make two orders answer to one key.
    const owner = state.keyHashes.get(keyHashOf(key.values.key));
    const ours = key.tollgateId;
    if (owner === undefined || owner === ours) return true;
    problems.push({ kind: 'apikey', fbId: key.fbId, outcome: 'skipped', message: `the key of order ${key.values.orderFbId} already exists in Tollgate (key ${owner})` });
    return false;
  });
  const { invoices, transactions, highestNumber } = planInvoices(data.invoices, data.items, data.transactions, clientIds, orderIds, state, fp, problems);

  for (const currency of data.currencies) {
    if (currency !== state.currency) {
      problems.push({ kind: 'currency', fbId: null, outcome: 'not imported', message: `${currency}: Tollgate has one currency (${state.currency}); orders and invoices in ${currency} keep their currency code` });
    }
  }
  const groupTitles = data.clientGroups.length;
  if (groupTitles > 0) problems.push({ kind: 'client_group', fbId: null, outcome: 'not imported', message: `${groupTitles} client groups: Tollgate has no client groups` });
  const imported = new Set(clients.map((client) => client.fbId));
  let total = 0;
  let holders = 0;
  const balances: Plan['balances'] = [];
  for (const balance of data.balances) {
    const minor = toMinor(balance.amount, state.precision);
    if (!imported.has(balance.client_id)) continue;
    // Tollgate's ledger never goes below zero: a client in debt to the seller is reported, not imported.
    if (minor < 0) {
      problems.push({ kind: 'balance', fbId: balance.client_id, outcome: 'skipped', message: `client ${balance.client_id} owes ${formatMoney(-minor, state.precision)} ${state.currency}: a negative balance is not imported` });
      continue;
    }
    // A zero balance is planned too once it was imported, so a balance spent down to 0 in FOSSBilling follows.
    if (minor === 0 && mappedId(state, 'balance', balance.client_id) === undefined) continue;
    if (minor > 0) {
      holders++;
      total += minor;
    }
    balances.push(planned(state, 'balance', balance.client_id, { clientFbId: balance.client_id, amount: minor }, fp));
  }
  const patch = Number(data.lastPatch);
  return {
    version: `FOSSBilling ${versionOfPatch(patch)} (schema patch ${patch})`,
    currency: state.currency,
    staffGroups,
    staff,
    clients,
    taxes,
    products,
    orders,
    keys,
    invoices,
    transactions,
    balances,
    clientGroups: groupTitles,
    balanceTotal: { clients: holders, total: formatMoney(total, state.precision) },
    problems,
    highestNumber,
  };
}
