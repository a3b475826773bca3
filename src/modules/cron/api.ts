// cron: staff run the scheduled jobs now (the server also runs them every minute unless SCHEDULER=off).
import { Type } from '@sinclair/typebox';
import { adminAction, type ModuleApi } from '../../http/action.ts';

export const cronApi: ModuleApi = {
  name: 'cron',
  admin: {
    run: adminAction({
      params: Type.Object({}),
      permission: 'system.manage',
      summary: 'Runs the scheduled jobs now; returns what they did',
      result: Type.Object({
        renewal_invoices: Type.Integer(),
        renewed_free: Type.Integer(),
        suspended: Type.Integer(),
        canceled: Type.Integer(),
        carts_purged: Type.Integer(),
        invoice_reminders: Type.Integer(),
        usage_invoices: Type.Integer({ description: 'Overage invoices issued for usage periods that closed' }),
        failed: Type.Integer(),
      }),
      handler: (_params, { services }) => services.cron.run(new Date()),
    }),
  },
};
