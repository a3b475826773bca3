// The guest key check and get_info, answered directly (src/http/direct.ts) for the plain JSON POST their callers
// send: the same parameters, policy and service calls as the gateway's actions in api.ts, without Fastify's routing.
import type { DirectRoute } from '../../http/direct.ts';
import type { Services } from '../../services.ts';
import { GuestKeyParams, serviceApiKeyApi } from './api.ts';

export function keyDirectRoutes(services: Pick<Services, 'apikeys'>): DirectRoute[] {
  const { apikeys } = services;
  const policyOf = (action: 'check' | 'get_info') => serviceApiKeyApi.guest?.[action]?.rateLimit ?? 'API_GUEST';
  const routes: DirectRoute<typeof GuestKeyParams>[] = [
    { url: '/api/guest/serviceapikey/check', params: GuestKeyParams, rateLimit: policyOf('check'), run: ({ key }, ip, headers) => apikeys.check(key, ip, headers) },
    { url: '/api/guest/serviceapikey/get_info', params: GuestKeyParams, rateLimit: policyOf('get_info'), run: ({ key }, ip, headers) => apikeys.getInfo(key, ip, headers) },
  ];
  return routes;
}
