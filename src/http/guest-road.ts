// The road every guest call takes, by the gateway's route (gateway.ts) or answered directly (direct.ts): the address
// policy first (its headers go on every answer, 422 included), then the parameters validated against the action's
// schema, then its handler. One implementation, so the two roads cannot drift apart. Stays synchronous when the
// policy's store and the action are: the key check on a warm cache is answered without a single promise.
import type { TObject } from '@sinclair/typebox';
import type { RateLimitPolicy } from '../platform/rate-limit.ts';
import type { ActionDef, CallContext, GuestIdentity } from '../platform/action.ts';
import { enforce, type HeaderTarget, type RateLimiter } from '../platform/rate-limit.ts';
import { compileValidator, type Validator } from './validate.ts';

export class GuestRoad {
  private readonly validate: Validator;
  private readonly policy: RateLimitPolicy;

  constructor(
    private readonly def: ActionDef<TObject, GuestIdentity>,
    private readonly limiter: Pick<RateLimiter, 'isExempt' | 'hit'>,
  ) {
    this.validate = compileValidator(def.params);
    this.policy = def.rateLimit ?? 'API_GUEST';
  }

  /** The action's result (or its promise); the policy's RateLimit-* headers are written to `headers`. */
  run(raw: Record<string, unknown>, call: CallContext<GuestIdentity>, headers: HeaderTarget): unknown {
    const ip = call.ip;
    if (!this.limiter.isExempt(ip)) {
      const decision = this.limiter.hit(this.policy, ip);
      if (decision instanceof Promise) {
        return decision.then((resolved) => {
          enforce(headers, resolved);
          return this.def.handler(this.validate(raw), call);
        });
      }
      enforce(headers, decision);
    }
    return this.def.handler(this.validate(raw), call);
  }
}
