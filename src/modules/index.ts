// The module registry: every API module the gateway serves. Add a module here and nowhere in http/.
import type { ModuleApi } from '../http/action.ts';
import { clientApi } from './client/api.ts';
import { profileApi } from './profile/api.ts';
import { staffApi } from './staff/api.ts';
import { systemApi } from './system/api.ts';

export const modules: readonly ModuleApi[] = [systemApi, staffApi, clientApi, profileApi];
