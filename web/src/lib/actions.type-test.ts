// Compile-time proof that the typed call refuses what the server would refuse: `npm run typecheck` fails if any
// line marked @ts-expect-error starts to compile. Nothing imports this file, so it is never bundled or run.
import { allPages, call } from './api.ts';
import type { Result } from './actions.ts';

export async function typedCallRefusals(): Promise<void> {
  const key = await call('admin/serviceapikey/get', { order_id: 1 });
  const readable: string = key.api_key;
  // @ts-expect-error the key is a string, not a number
  const misread: number = key.api_key;
  // @ts-expect-error no such action
  await call('admin/serviceapikey/gett', { order_id: 1 });
  // @ts-expect-error an unknown parameter
  await call('admin/serviceapikey/get', { order: 1 });
  // @ts-expect-error order_id is required
  await call('admin/serviceapikey/get');
  // An action without required parameters takes none.
  const { role } = await call('guest/session/whoami');
  // @ts-expect-error role is one of guest, client and admin
  const unknownRole: Result<'guest/session/whoami'>['role'] = 'staff';
  const orders = await allPages('admin/order/get_list', { status: 'active' });
  // @ts-expect-error a list action's items are typed: an order has no api_key
  const noKey = orders.list[0]?.api_key;
  // @ts-expect-error allPages walks list actions only
  await allPages('admin/serviceapikey/get', { order_id: 1 });
  void [readable, misread, role, unknownRole, noKey];
}
