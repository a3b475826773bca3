// Planning products, orders and API keys. Rules (docs/moving-from-fossbilling.md):
// - Products of type `apikey` and `custom` keep their type; other types (hosting, domain, license, …) arrive as
//   `custom` products (Tollgate runs no service for them). Periods and prices come from product_payment.
// - An apikey config is read as FOSSBilling wrote it (`case`, flat `custom_<name>`); a malformed JSON config or one
//   Tollgate refuses becomes the defaults, reported as fixed.
// - An order whose client or product is missing or skipped is skipped (an orphan), with its key and invoice lines'
//   link. `failed_renew` (still active in FOSSBilling's tables, but its keys refused) becomes `suspended`.
// - A key is imported with its order; a key no order points at (its order was deleted), one never issued, or one
//   Tollgate cannot check (shorter than 8 characters, not hexadecimal) is skipped.
import { precisionOf } from '../../lib/currency.ts';
import { couldBeKey } from '../../lib/keygen.ts';
import { normalizeApiKeyConfig, readApiKeyConfig, type ApiKeyConfig } from '../../modules/serviceapikey/options.ts';
import { isoOf, jsonObject, periodOf, PERIOD_COLUMNS, textOf, toMinor } from './convert.ts';
import type { FbApiKey, FbOrder, FbProduct, FbProductPayment } from './source.ts';
import { planned, type KeyValues, type OrderStatus, type OrderValues, type Planned, type Problem, type ProductValues, type TollgateState } from './plan-types.ts';

type Fingerprint = (json: string) => string;

const ORDER_STATUSES: ReadonlySet<string> = new Set(['pending_setup', 'failed_setup', 'active', 'suspended', 'canceled']);

/** An apikey config in Tollgate's stored form; `ok` false when FOSSBilling's was malformed or refused. */
function apiKeyConfig(text: string | null): { config: ApiKeyConfig; ok: boolean } {
  const parsed = jsonObject(text);
  try {
    return { config: normalizeApiKeyConfig(parsed.value), ok: parsed.ok };
  } catch {
    return { config: readApiKeyConfig({}), ok: false };
  }
}

function pricingOf(payment: FbProductPayment | undefined, precision: number): string {
  if (payment === undefined || (payment.type !== 'once' && payment.type !== 'recurrent')) {
    return JSON.stringify({ type: 'free', once: { price: 0, setup: 0 }, recurrent: {} });
  }
  const recurrent: Record<string, { price: number; setup: number; enabled: boolean }> = {};
  if (payment.type === 'recurrent') {
    for (const [prefix, code] of PERIOD_COLUMNS) {
      recurrent[code] = {
        price: toMinor(payment[`${prefix}_price`] ?? null, precision),
        setup: toMinor(payment[`${prefix}_setup_price`] ?? null, precision),
        enabled: Number(payment[`${prefix}_enabled`] ?? 0) === 1,
      };
    }
  }
  const once = { price: toMinor(payment.once_price, precision), setup: toMinor(payment.once_setup_price, precision) };
  return JSON.stringify({ type: payment.type, once, recurrent });
}

function slugOf(product: FbProduct): string {
  const base = (textOf(product.slug) ?? textOf(product.title) ?? `product-${product.id}`).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
  return base === '' ? `product-${product.id}` : base.slice(0, 100);
}

export function planProducts(products: FbProduct[], payments: FbProductPayment[], state: TollgateState, fp: Fingerprint, problems: Problem[]): Array<Planned<ProductValues>> {
  const paymentById = new Map(payments.map((payment) => [payment.id, payment]));
  const taken = new Set<string>();
  return products.map((product) => {
    const report = (message: string): void => void problems.push({ kind: 'product', fbId: product.id, outcome: 'fixed', message });
    const type = product.type === 'apikey' || product.type === 'custom' ? product.type : 'custom';
    if (type !== product.type) report(`type "${product.type ?? ''}" has no Tollgate service: imported as a custom product`);
    let config: string;
    if (type === 'apikey') {
      const read = apiKeyConfig(product.config);
      if (!read.ok) report('config is not valid JSON or not valid key options: imported with the default key options');
      config = JSON.stringify(read.config);
    } else {
      const read = jsonObject(product.config);
      if (!read.ok) report('config is not valid JSON: imported empty');
      config = JSON.stringify(read.value);
    }
    let slug = slugOf(product);
    const owner = state.productSlugs.get(slug);
    if (taken.has(slug) || (owner !== undefined && owner !== state.mapped.get('product')?.get(product.id)?.tollgateId)) {
      slug = `${slug}-fb${product.id}`;
      report(`slug already used: imported as "${slug}"`);
    }
    taken.add(slug);
    const created = isoOf(product.created_at) ?? '1970-01-01T00:00:00Z';
    const setup = product.setup === 'after_order' || product.setup === 'manual' ? product.setup : 'after_payment';
    return planned(state, 'product', product.id, {
      title: textOf(product.title) ?? `Product ${product.id}`,
      slug,
      description: textOf(product.description),
      type,
      status: product.status === 'disabled' ? 'disabled' : 'enabled',
      hidden: product.hidden === 1 ? 1 : 0,
      setup,
      pricing: pricingOf(product.product_payment_id === null ? undefined : paymentById.get(product.product_payment_id), state.precision),
      config,
      created_at: created,
      updated_at: isoOf(product.updated_at) ?? created,
    } satisfies ProductValues, fp);
  });
}

export function planOrders(
  orders: FbOrder[],
  clientIds: ReadonlySet<number>,
  productTypes: ReadonlyMap<number, string>,
  state: TollgateState,
  fp: Fingerprint,
  problems: Problem[],
): Array<Planned<OrderValues>> {
  const out: Array<Planned<OrderValues>> = [];
  for (const order of orders) {
    const report = (outcome: Problem['outcome'], message: string): void => void problems.push({ kind: 'order', fbId: order.id, outcome, message });
    if (order.client_id === null || !clientIds.has(order.client_id)) { report('skipped', `orphan order: client ${order.client_id ?? 'none'} is missing or skipped`); continue; }
    const type = order.product_id === null ? undefined : productTypes.get(order.product_id);
    if (order.product_id === null || type === undefined) { report('skipped', `orphan order: product ${order.product_id ?? 'none'} is missing`); continue; }
    let status: OrderStatus = ORDER_STATUSES.has(order.status ?? '') ? (order.status as OrderStatus) : 'pending_setup';
    let reason = textOf(order.reason);
    if (order.status === 'failed_renew') {
      status = 'suspended';
      reason ??= 'Renewal failed in FOSSBilling';
      report('fixed', 'status failed_renew: imported as suspended (its key stays refused, as in FOSSBilling)');
    } else if (status !== order.status) report('fixed', `unknown status "${order.status ?? ''}": imported as pending_setup`);
    let config: string;
    if (type === 'apikey') {
      const read = apiKeyConfig(order.config);
      if (!read.ok) report('fixed', 'config is not valid JSON or not valid key options: imported with the default key options');
      config = JSON.stringify(read.config);
    } else {
      const read = jsonObject(order.config);
      if (!read.ok) report('fixed', 'config is not valid JSON: imported empty');
      config = JSON.stringify(read.value);
    }
    const currency = textOf(order.currency)?.toUpperCase() ?? state.currency;
    const created = isoOf(order.created_at) ?? '1970-01-01T00:00:00Z';
    out.push(
      planned(state, 'order', order.id, {
        clientFbId: order.client_id,
        productFbId: order.product_id,
        title: textOf(order.title) ?? `Order ${order.id}`,
        type,
        period: periodOf(order.period),
        quantity: Math.max(1, order.quantity ?? 1),
        price: toMinor(order.price, precisionOf(currency)),
        currency,
        status,
        reason,
        notes: textOf(order.notes),
        config,
        expires_at: isoOf(order.expires_at),
        activated_at: isoOf(order.activated_at),
        suspended_at: isoOf(order.suspended_at),
        canceled_at: isoOf(order.canceled_at),
        created_at: created,
        updated_at: isoOf(order.updated_at) ?? created,
      }, fp),
    );
  }
  return out;
}

export function planKeys(keys: FbApiKey[], orders: FbOrder[], orderIds: ReadonlySet<number>, state: TollgateState, fp: Fingerprint, problems: Problem[]): Array<Planned<KeyValues>> {
  // FOSSBilling links an order to its key with client_order.service_id (service_type 'apikey').
  const orderOfKey = new Map<number, FbOrder>();
  for (const order of orders) if (order.service_type === 'apikey' && order.service_id !== null) orderOfKey.set(order.service_id, order);
  const out: Array<Planned<KeyValues>> = [];
  const seen = new Set<string>();
  for (const key of keys) {
    const skip = (message: string): void => void problems.push({ kind: 'apikey', fbId: key.id, outcome: 'skipped', message });
    const order = orderOfKey.get(key.id);
    if (order === undefined) { skip('key of a deleted order: no order points at it'); continue; }
    if (!orderIds.has(order.id)) { skip(`its order ${order.id} was skipped`); continue; }
    const value = key.api_key ?? '';
    if (value === '') { skip(`order ${order.id} was never activated: no key was issued`); continue; }
    if (!couldBeKey(value)) { skip(`key of order ${order.id} is not one Tollgate can check (8–128 hexadecimal characters with dashes)`); continue; }
    if (seen.has(value)) { skip(`key of order ${order.id} is the same as another imported key`); continue; }
    seen.add(value);
    // The key's own config is the order's as it was at activation, later edited by staff: it wins over the order's.
    let read = apiKeyConfig(key.config);
    if (!read.ok) {
      const fromOrder = apiKeyConfig(order.config);
      problems.push({ kind: 'apikey', fbId: key.id, outcome: 'fixed', message: fromOrder.ok ? "config is not valid JSON: the order's config is used" : 'config is not valid JSON: the default key options are used, with no custom parameters' });
      read = fromOrder;
    }
    const { config } = read;
    const created = isoOf(key.created_at) ?? '1970-01-01T00:00:00Z';
    out.push(
      planned(state, 'apikey', key.id, {
        orderFbId: order.id,
        clientFbId: order.client_id ?? 0,
        key: value,
        options: JSON.stringify({ length: config.length, split: config.split, split_interval: config.split_interval, capitalization: config.capitalization, enforce_limit: config.enforce_limit, rate_limit: config.rate_limit, max_keys: config.max_keys }),
        config: JSON.stringify(config.custom),
        created_at: created,
        updated_at: isoOf(key.updated_at) ?? created,
      }, fp),
    );
  }
  return out;
}
