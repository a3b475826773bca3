// Parameters the client's own actions share with the profile module's (client/profile/update).
import { Type } from '@sinclair/typebox';

export const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Text = Type.String({ maxLength: 255 });

/** Optional profile fields shared by sign-up, staff create/update and the client's own profile update. */
export const profileParams = {
  last_name: Type.Optional(Text),
  company: Type.Optional(Text),
  phone: Type.Optional(Type.String({ maxLength: 64 })),
  /** FOSSBilling's country calling code beside a national `phone` ("49" or "+49"); stored as one international number. */
  phone_cc: Type.Optional(Type.Union([Type.String({ maxLength: 8 }), Type.Integer({ minimum: 1, maximum: 9999 })])),
  address_1: Type.Optional(Text),
  address_2: Type.Optional(Text),
  city: Type.Optional(Text),
  state: Type.Optional(Text),
  postcode: Type.Optional(Type.String({ maxLength: 64 })),
  country: Type.Optional(Type.String({ maxLength: 64 })),
  currency: Type.Optional(Type.String({ maxLength: 3 })),
  vat_number: Type.Optional(Type.String({ maxLength: 64 })),
};

