// profile/totp_*: the caller's own two-factor login (CONTRACT §10), for clients and staff alike. The account module
// does the work (account/two-factor.ts); these are the profile module's actions for it.
import { Type } from '@sinclair/typebox';
import { actionsFor, type AdminIdentity, type ClientIdentity } from '../../platform/action.ts';
import { errors } from '../../platform/errors.ts';
import { Done } from '../../platform/schemas.ts';
import { SecondFactorCode } from '../account/login.ts';
import type { TwoFactorService } from '../account/two-factor.ts';
import type { TwoFactorSubject } from '../account/types.ts';
import type { ClientService } from '../client/service.ts';
import type { StaffService } from '../staff/service.ts';

export interface TwoFactorNeeds {
  twoFactor: Pick<TwoFactorService, 'status' | 'setup' | 'enable' | 'disable'>;
  clients: Pick<ClientService, 'verifyOwnPassword'>;
  staff: Pick<StaffService, 'verifyOwnPassword'>;
}

const { adminAction, clientAction } = actionsFor<TwoFactorNeeds>();

const NO_PARAMS = Type.Object({});
const Password = Type.String({ minLength: 1, maxLength: 256 });

async function requireOwnPassword(services: TwoFactorNeeds, subject: TwoFactorSubject, password: string): Promise<void> {
  const ok =
    subject.type === 'client' ? await services.clients.verifyOwnPassword(subject.id, password) : await services.staff.verifyOwnPassword(subject.id, password);
  if (!ok) throw errors.invalid('password', 'is not correct');
}

function twoFactorActions<I>(subjectOf: (identity: I) => TwoFactorSubject & { email: string }) {
  return {
    totp_get: {
      params: NO_PARAMS,
      summary: 'Whether two-factor login is on, and how many recovery codes are left',
      result: Type.Object({ enabled: Type.Boolean(), recovery_codes_left: Type.Integer({ minimum: 0 }) }),
      handler: (_params: object, { services, identity }: { services: TwoFactorNeeds; identity: I }) => services.twoFactor.status(subjectOf(identity)),
    },
    totp_setup: {
      postOnly: true,
      params: NO_PARAMS,
      summary: 'Starts two-factor set-up: a new secret and its otpauth:// URL for the authenticator app (QR code)',
      result: Type.Object({
        secret: Type.String({ description: 'Base32 secret, for typing into the app by hand' }),
        otpauth_url: Type.String({ description: 'otpauth://totp/… URI, for a QR code' }),
      }),
      handler(_params: object, { services, identity }: { services: TwoFactorNeeds; identity: I }) {
        const subject = subjectOf(identity);
        return services.twoFactor.setup(subject, subject.email);
      },
    },
    totp_enable: {
      postOnly: true,
      params: Type.Object({ code: Type.String({ pattern: '^\\s*\\d{6}\\s*$' }) }),
      summary: 'Turns two-factor login on with a first code; returns ten recovery codes, shown once',
      result: Type.Object({ recovery_codes: Type.Array(Type.String({ description: 'xxxxx-xxxxx' }), { minItems: 10, maxItems: 10 }) }),
      handler: ({ code }: { code: string }, { services, identity }: { services: TwoFactorNeeds; identity: I }) => services.twoFactor.enable(subjectOf(identity), code),
    },
    totp_disable: {
      postOnly: true,
      params: Type.Object({ password: Password, code: SecondFactorCode }),
      summary: 'Turns two-factor login off; needs the password and a current code or a recovery code',
      result: Done,
      async handler({ password, code }: { password: string; code: string }, { services, identity }: { services: TwoFactorNeeds; identity: I }) {
        const subject = subjectOf(identity);
        await requireOwnPassword(services, subject, password);
        await services.twoFactor.disable(subject, code);
        return true;
      },
    },
  };
}

const clientTwoFactor = twoFactorActions((identity: ClientIdentity) => ({ type: 'client', id: identity.client.id, email: identity.client.email }));
const staffTwoFactor = twoFactorActions((identity: AdminIdentity) => ({ type: 'admin', id: identity.staff.id, email: identity.staff.email }));

export const clientTwoFactorActions = {
  totp_get: clientAction(clientTwoFactor.totp_get),
  totp_setup: clientAction(clientTwoFactor.totp_setup),
  totp_enable: clientAction(clientTwoFactor.totp_enable),
  totp_disable: clientAction(clientTwoFactor.totp_disable),
};

export const staffTwoFactorActions = {
  totp_get: adminAction(staffTwoFactor.totp_get),
  totp_setup: adminAction(staffTwoFactor.totp_setup),
  totp_enable: adminAction(staffTwoFactor.totp_enable),
  totp_disable: adminAction(staffTwoFactor.totp_disable),
};
