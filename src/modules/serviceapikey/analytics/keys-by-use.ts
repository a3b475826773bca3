// The staff keys list with each key's last use (issue 25 item 6): admin/serviceapikey/get_list. Sorted by last use
// (most recent first, never-used keys last) or by newest key; each row names its order, plan and client so the list
// reads on its own. The last use is the flush's (api_key_last_use, at most a second behind the checks).
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { pageRequest, toPage, type Page } from '../../../lib/paginator.ts';

export interface KeyUseParams {
  page?: number | undefined;
  per_page?: number | undefined;
  sort?: 'last_used' | 'newest' | undefined;
  order_id?: number | undefined;
  client_id?: number | undefined;
  /** The order's status. */
  status?: 'pending_setup' | 'failed_setup' | 'active' | 'suspended' | 'canceled' | undefined;
}

export interface KeyUseRow {
  id: number;
  name: string | null;
  order_id: number;
  order_title: string;
  order_status: string;
  client_id: number;
  client_name: string;
  client_email: string;
  valid: 0 | 1;
  created_at: string;
  last_used_at: string | null;
  last_used_ip: string | null;
}

export async function keysByUse(db: Kysely<Database>, params: KeyUseParams): Promise<Page<KeyUseRow>> {
  const request = pageRequest(params);
  let filtered = db
    .selectFrom('api_keys')
    .innerJoin('orders', 'orders.id', 'api_keys.order_id')
    .innerJoin('clients', 'clients.id', 'api_keys.client_id')
    .leftJoin('api_key_last_use as last', 'last.api_key_id', 'api_keys.id')
    .where('api_keys.deleted_at', 'is', null);
  if (params.order_id !== undefined) filtered = filtered.where('api_keys.order_id', '=', params.order_id);
  if (params.client_id !== undefined) filtered = filtered.where('api_keys.client_id', '=', params.client_id);
  if (params.status !== undefined) filtered = filtered.where('orders.status', '=', params.status);
  const total = await filtered.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow();
  let rows = filtered.select([
    'api_keys.id',
    'api_keys.name',
    'api_keys.order_id',
    'orders.title as order_title',
    'orders.status as order_status',
    'api_keys.client_id',
    'clients.first_name',
    'clients.last_name',
    'clients.email as client_email',
    'api_keys.valid',
    'api_keys.created_at',
    'last.at as last_used_at',
    'last.ip as last_used_ip',
  ]);
  rows = params.sort === 'newest' ? rows.orderBy('api_keys.id', 'desc') : rows.orderBy('last.at', (ob) => ob.desc().nullsLast()).orderBy('api_keys.id', 'desc');
  const list = await rows.limit(request.perPage).offset(request.offset).execute();
  return toPage(
    request,
    Number(total.n),
    list.map(({ first_name, last_name, valid, ...row }) => ({ ...row, client_name: `${first_name} ${last_name ?? ''}`.trim(), valid: valid === 1 ? 1 : 0 })),
  );
}
