// system: the periods catalogue and the API version.
import { Type } from '@sinclair/typebox';
import { guestAction, type ModuleApi } from '../../http/action.ts';
import { PERIOD_LABELS } from '../../lib/periods.ts';
import { VERSION } from '../../version.ts';

const NO_PARAMS = Type.Object({});

export const systemApi: ModuleApi = {
  name: 'system',
  guest: {
    periods: guestAction({ params: NO_PARAMS, summary: 'Billing periods offered by default', handler: () => PERIOD_LABELS }),
    version: guestAction({ params: NO_PARAMS, summary: 'Semantic version of the API', handler: () => VERSION }),
  },
};
