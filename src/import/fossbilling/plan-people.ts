// Planning staff, staff groups, clients and tax rules. Rules (docs/moving-from-fossbilling.md):
// - FOSSBilling's group 1 (Super Administrator) is Tollgate's Administrators group; other groups arrive by name with
//   no permissions (FOSSBilling's permission names are not Tollgate's), to be granted in Staff → Groups.
// - Staff arrive without a password (they reset theirs); a staff member whose e-mail Tollgate already has, or whose
//   group does not exist, is skipped.
// - Clients keep their bcrypt password hash and API token; a blank or malformed e-mail, an e-mail a lower FOSSBilling
//   id already uses (case-insensitively), or one a Tollgate client not from this import has → the client is skipped,
//   with everything of it (orders, keys, invoices, transactions).
import { isLegacyHash } from '../../lib/passwords.ts';
import type { FbAdmin, FbAdminGroup, FbClient, FbTax } from './source.ts';
import { countryOf, isoOf, rateOf, textOf } from './convert.ts';
import { mappedId, planned, type ClientValues, type Planned, type Problem, type StaffGroupValues, type StaffValues, type TaxValues, type TollgateState } from './plan-types.ts';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
// Tollgate verifies these once and rehashes them to argon2id at the client's next login (src/lib/passwords.ts).
const BCRYPT = { test: (hash: string): boolean => isLegacyHash(hash) };
/** Tollgate's API tokens are 32 of [A-Za-z0-9]; FOSSBilling's are hex of that length or longer. */
const TOKEN = /^[A-Za-z0-9]{32,128}$/;

export const FB_SUPER_ADMIN_GROUP = 1;

type Fingerprint = (json: string) => string;

export function planStaffGroups(groups: FbAdminGroup[], state: TollgateState, fp: Fingerprint): Array<Planned<StaffGroupValues>> {
  return groups
    .filter((group) => group.id !== FB_SUPER_ADMIN_GROUP)
    .map((group) => planned(state, 'staff_group', group.id, { name: `${textOf(group.name) ?? `Group ${group.id}`} (FOSSBilling)` }, fp));
}

export function planStaff(admins: FbAdmin[], groups: ReadonlySet<number>, state: TollgateState, fp: Fingerprint, problems: Problem[]): Array<Planned<StaffValues>> {
  const out: Array<Planned<StaffValues>> = [];
  const seen = new Set<string>();
  for (const admin of admins) {
    const email = textOf(admin.email)?.toLowerCase() ?? '';
    const skip = (message: string): void => void problems.push({ kind: 'staff', fbId: admin.id, outcome: 'skipped', message });
    if (!EMAIL.test(email)) { skip(`e-mail "${admin.email ?? ''}" is not an address`); continue; }
    if (seen.has(email)) { skip(`e-mail ${email} is used by a staff member with a lower id`); continue; }
    seen.add(email);
    const group = admin.group_id;
    if (group === null || (group !== FB_SUPER_ADMIN_GROUP && !groups.has(group))) { skip(`staff group ${group ?? 'none'} does not exist`); continue; }
    const existing = state.staffEmails.get(email);
    if (existing !== undefined && existing !== mappedId(state, 'staff', admin.id)) {
      skip(`e-mail ${email} already belongs to Tollgate staff member ${existing}: kept as it is`);
      continue;
    }
    const created = isoOf(admin.created_at) ?? '1970-01-01T00:00:00Z';
    out.push(
      planned(state, 'staff', admin.id, {
        email,
        name: textOf(admin.name) ?? email,
        status: admin.status === 'inactive' ? 'inactive' : 'active',
        groupFbId: group,
        apiToken: TOKEN.test(admin.api_token ?? '') ? admin.api_token : null,
        created_at: created,
        updated_at: isoOf(admin.updated_at) ?? created,
      }, fp),
    );
  }
  return out;
}

export function planClients(clients: FbClient[], state: TollgateState, fp: Fingerprint, problems: Problem[]): Array<Planned<ClientValues>> {
  const out: Array<Planned<ClientValues>> = [];
  const seen = new Map<string, number>();
  for (const client of clients) {
    const email = textOf(client.email)?.toLowerCase() ?? '';
    const report = (outcome: Problem['outcome'], message: string): void => void problems.push({ kind: 'client', fbId: client.id, outcome, message });
    if (!EMAIL.test(email)) { report('skipped', `e-mail "${client.email ?? ''}" is not an address`); continue; }
    const first = seen.get(email);
    if (first !== undefined) { report('skipped', `duplicate e-mail ${email}: client ${first} has it (the lowest id keeps it)`); continue; }
    seen.set(email, client.id);
    const existing = state.clientEmails.get(email);
    if (existing !== undefined && existing !== mappedId(state, 'client', client.id)) {
      report('skipped', `e-mail ${email} already belongs to Tollgate client ${existing}`);
      continue;
    }
    const pass = textOf(client.pass);
    if (pass !== null && !BCRYPT.test(pass)) report('fixed', 'password hash is not bcrypt: imported without a password (the client resets it)');
    const country = countryOf(client.country);
    if (country === null && textOf(client.country) !== null) report('fixed', `country "${client.country}" is not an ISO 3166 code: left blank`);
    const status = client.status === 'suspended' || client.status === 'canceled' ? client.status : 'active';
    const created = isoOf(client.created_at) ?? '1970-01-01T00:00:00Z';
    const phone = textOf(client.phone);
    const cc = textOf(client.phone_cc)?.replace(/^\+/, '') ?? null;
    out.push(
      planned(state, 'client', client.id, {
        email,
        password_hash: pass !== null && BCRYPT.test(pass) ? pass : null,
        first_name: textOf(client.first_name) ?? '',
        last_name: textOf(client.last_name),
        company: textOf(client.company),
        phone: phone === null ? null : cc === null ? phone : `+${cc} ${phone}`,
        address_1: textOf(client.address_1),
        address_2: textOf(client.address_2),
        city: textOf(client.city),
        state: textOf(client.state),
        postcode: textOf(client.postcode),
        country,
        currency: textOf(client.currency)?.toUpperCase() ?? null,
        status,
        tax_exempt: client.tax_exempt === 1 ? 1 : 0,
        vat_number: textOf(client.company_vat),
        email_verified_at: client.email_approved === 1 ? created : null,
        apiToken: TOKEN.test(client.api_token ?? '') ? client.api_token : null,
        created_at: created,
        updated_at: isoOf(client.updated_at) ?? created,
      }, fp),
    );
  }
  return out;
}

export function planTaxes(taxes: FbTax[], state: TollgateState, fp: Fingerprint): Array<Planned<TaxValues>> {
  return taxes.map((tax) =>
    planned(state, 'tax', tax.id, { name: textOf(tax.name) ?? 'Tax', rate: rateOf(tax.taxrate), country: countryOf(tax.country), state: textOf(tax.state) }, fp),
  );
}
