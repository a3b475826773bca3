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
      handler: (_params, { services }) => services.cron.run(new Date()),
    }),
  },
};
