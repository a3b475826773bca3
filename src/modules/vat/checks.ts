// VAT numbers checked, not believed (issue 26 item 1): the only writer of `vat_checks`. A client's EU VAT number is
// checked with VIES when it is set or changed (and at a sale that finds it unchecked), through the outbox kind
// `vat_check`, so VIES being down never blocks anything: the check is retried with backoff while sales are taxed as
// consumer sales. Each answer is stored with VIES's consultation number and date; a number that becomes valid emits
// `vat.number_confirmed` (once, by a compare-and-set on the status) so the invoice module can correct open sales; a
// number VIES now calls invalid is stored as such and later sales are consumer sales again.
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { EventBus } from '../../platform/events.ts';
import { errors } from '../../platform/errors.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { appliesEuRules, type VatStatus } from '../../lib/eu-vat.ts';
import { countryOfPrefix, isEuMemberState, parseEuVatNumber } from '../../lib/vat-numbers.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { OutboxService } from '../outbox/service.ts';
import type { SystemService } from '../system/service.ts';
import type { VatCheckTable } from './tables.ts';
import { checkVatNumber, ViesUnavailable, type ViesAnswer } from './vies-client.ts';
import './events.ts';

export const VAT_CHECK_KIND = 'vat_check';
/** After failed attempt n the check waits the nth delay: 1 min, 5 min, 15 min, 1 h, 3 h, 6 h, then twice a day for 3 days. */
export const VAT_CHECK_RETRY_DELAYS_MS: readonly number[] = [60_000, 300_000, 900_000, 3_600_000, 10_800_000, 21_600_000, ...Array<number>(6).fill(43_200_000)];

type CheckRow = Selectable<VatCheckTable>;

/** What staff and the client see of a client's VAT number (admin/client/vat_status, client/profile/vat_status). */
export interface VatCheckRecord {
  vat_number: string | null;
  /** `none`: no number; `not_applicable`: not an EU number (VIES cannot check it); `unchecked`: never asked yet. */
  status: 'none' | 'not_applicable' | 'unchecked' | 'pending' | 'valid' | 'invalid';
  consultation_number: string | null;
  checked_at: string | null;
  name: string | null;
  address: string | null;
  last_error: string | null;
  attempts: number;
  updated_at: string | null;
}

export interface VatCheckDeps {
  db: Kysely<Database>;
  events: EventBus;
  outbox: Pick<OutboxService, 'registerKind' | 'enqueue'>;
  settings: Pick<SystemService, 'get' | 'peek' | 'company'>;
  timeoutMs: number;
  retryDelaysMs?: readonly number[];
}

/** The member state of a stored EU number (its prefix), or null for a number VIES cannot check. */
function euCountryOf(vatNumber: string): string | null {
  const country = countryOfPrefix(vatNumber.slice(0, 2));
  return country !== null && parseEuVatNumber(country, vatNumber) !== null ? country : null;
}

export function createVatChecks({ db, events, outbox, settings, timeoutMs, retryDelaysMs = VAT_CHECK_RETRY_DELAYS_MS }: VatCheckDeps) {
  async function rowOf(trx: Kysely<Database>, clientId: number): Promise<CheckRow | undefined> {
    return trx.selectFrom('vat_checks').selectAll().where('client_id', '=', clientId).executeTakeFirst();
  }

  /** Whether this instance applies the EU rules (only then are numbers sent to VIES); read inside `trx`, so `peek`. */
  async function euRulesOn(trx: Kysely<Database>): Promise<boolean> {
    return appliesEuRules((await settings.company(trx)).country, settings.peek('eu_vat'));
  }

  /** Marks the number pending (a new number starts afresh) and queues its check, inside `trx`. */
  async function request(trx: Kysely<Database>, clientId: number, vatNumber: string, country: string, now: Date): Promise<void> {
    const at = isoSeconds(now);
    const row = await rowOf(trx, clientId);
    if (row === undefined) {
      await trx.insertInto('vat_checks').values({ client_id: clientId, vat_number: vatNumber, country, status: 'pending', consultation_number: null, checked_at: null, name: null, address: null, last_error: null, created_at: at, updated_at: at }).execute();
    } else if (row.vat_number !== vatNumber) {
      await trx.updateTable('vat_checks').set({ vat_number: vatNumber, country, status: 'pending', consultation_number: null, checked_at: null, name: null, address: null, last_error: null, attempts: 0, updated_at: at }).where('id', '=', row.id).execute();
    }
    await outbox.enqueue(trx, { kind: VAT_CHECK_KIND, payload: { clientId, vatNumber } });
  }

  /** The seller's own number split for VIES, so its answer carries a consultation number; null when it has none. */
  async function requester(): Promise<{ countryCode: string; vatNumber: string } | null> {
    const company = await settings.company();
    if (company.country === null || company.vat_number === null || !isEuMemberState(company.country)) return null;
    const parsed = parseEuVatNumber(company.country, company.vat_number);
    return parsed === null ? null : { countryCode: parsed.full.slice(0, 2), vatNumber: parsed.number };
  }

  async function ask(vatNumber: string): Promise<ViesAnswer> {
    const url = (await settings.get('vies_url')) ?? 'https://ec.europa.eu/taxation_customs/vies/rest-api';
    return checkVatNumber(url, { countryCode: vatNumber.slice(0, 2), vatNumber: vatNumber.slice(2), requester: await requester() }, timeoutMs);
  }

  /** Stores VIES's answer for the client's current number; a newly valid number emits `vat.number_confirmed` once. */
  async function record(clientId: number, vatNumber: string, answer: ViesAnswer, now: Date): Promise<void> {
    await inTransaction(db, async (trx) => {
      const values = {
        consultation_number: answer.requestIdentifier,
        checked_at: isoSeconds(new Date(answer.requestDate)),
        name: answer.name,
        address: answer.address,
        last_error: null,
        updated_at: isoSeconds(now),
      };
      const base = trx.updateTable('vat_checks').where('client_id', '=', clientId).where('vat_number', '=', vatNumber);
      if (answer.valid) {
        // The compare-and-set: only the answer that turns the number valid tells the invoices.
        const turned = await base.set((eb) => ({ ...values, status: 'valid', attempts: eb('attempts', '+', 1) })).where('status', '!=', 'valid').executeTakeFirst();
        if (Number(turned.numUpdatedRows) === 1) {
          await events.emit('vat.number_confirmed', { clientId, vatNumber, consultationNumber: answer.requestIdentifier, checkedAt: values.checked_at }, trx);
          return;
        }
      }
      await base.set((eb) => ({ ...values, status: answer.valid ? 'valid' : 'invalid', attempts: eb('attempts', '+', 1) })).execute();
    });
  }

  /** Notes why VIES gave no answer (the check stays pending and is retried). */
  async function noteFailure(clientId: number, vatNumber: string, error: ViesUnavailable, now: Date): Promise<void> {
    await db
      .updateTable('vat_checks')
      .set((eb) => ({ last_error: error.message.slice(0, 255), attempts: eb('attempts', '+', 1), updated_at: isoSeconds(now) }))
      .where('client_id', '=', clientId)
      .where('vat_number', '=', vatNumber)
      .execute();
  }

  /** The client's current number, when it is still the one to check. */
  async function currentNumber(clientId: number): Promise<string | null> {
    const client = await db.selectFrom('clients').select('vat_number').where('id', '=', clientId).executeTakeFirst();
    return client?.vat_number ?? null;
  }

  outbox.registerKind(VAT_CHECK_KIND, {
    retryDelaysMs,
    async deliver(payload) {
      const { clientId, vatNumber } = payload as { clientId: number; vatNumber: string };
      // A number changed since the check was queued has a check of its own.
      if ((await currentNumber(clientId)) !== vatNumber) return;
      const now = new Date();
      try {
        await record(clientId, vatNumber, await ask(vatNumber), now);
      } catch (error) {
        if (error instanceof ViesUnavailable) await noteFailure(clientId, vatNumber, error, now);
        throw error;
      }
    },
  });

  function toRecord(vatNumber: string | null, row: CheckRow | undefined): VatCheckRecord {
    const empty = { consultation_number: null, checked_at: null, name: null, address: null, last_error: null, attempts: 0, updated_at: null };
    if (vatNumber === null) return { vat_number: null, status: 'none', ...empty };
    if (euCountryOf(vatNumber) === null) return { vat_number: vatNumber, status: 'not_applicable', ...empty };
    if (row === undefined || row.vat_number !== vatNumber) return { vat_number: vatNumber, status: 'unchecked', ...empty };
    const { consultation_number, checked_at, name, address, last_error, attempts, updated_at } = row;
    return { vat_number: vatNumber, status: row.status, consultation_number, checked_at, name, address, last_error, attempts, updated_at };
  }

  async function get(clientId: number): Promise<VatCheckRecord> {
    const client = await db.selectFrom('clients').select('vat_number').where('id', '=', clientId).executeTakeFirst();
    if (client === undefined) throw errors.notFound('Client');
    return toRecord(client.vat_number, await rowOf(db, clientId));
  }

  return {
    get,

    /** Where the number stands for a sale, inside the sale's transaction, and its consultation number when valid. */
    async statusFor(trx: Kysely<Database>, clientId: number, vatNumber: string | null): Promise<{ status: VatStatus; consultationNumber: string | null }> {
      if (vatNumber === null) return { status: 'none', consultationNumber: null };
      const row = await rowOf(trx, clientId);
      if (row === undefined || row.vat_number !== vatNumber) return { status: 'unchecked', consultationNumber: null };
      return { status: row.status, consultationNumber: row.consultation_number };
    },

    /** At a sale: an EU number never checked is queued for a check now (the sale goes on as a consumer sale). */
    async requestIfUnchecked(trx: Kysely<Database>, clientId: number, vatNumber: string | null, now: Date): Promise<void> {
      const country = vatNumber === null ? null : euCountryOf(vatNumber);
      if (country === null || !(await euRulesOn(trx))) return;
      const row = await rowOf(trx, clientId);
      if (row === undefined || row.vat_number !== vatNumber) await request(trx, clientId, vatNumber!, country, now);
    },

    /**
     * admin/client/vat_check: asks VIES now and answers the stored result. When VIES gives no answer the check stays
     * pending, its reason shown, and a retry is queued: never a 5xx. 409 when the client has no EU VAT number.
     */
    async checkNow(clientId: number, now = new Date()): Promise<VatCheckRecord> {
      const vatNumber = (await get(clientId)).vat_number;
      if (vatNumber === null) throw errors.conflict('The client has no VAT number');
      const country = euCountryOf(vatNumber);
      if (country === null) throw errors.conflict('VIES checks only the VAT numbers of EU member states');
      await inTransaction(db, async (trx) => {
        const row = await rowOf(trx, clientId);
        if (row === undefined || row.vat_number !== vatNumber) await request(trx, clientId, vatNumber, country, now);
      });
      try {
        await record(clientId, vatNumber, await ask(vatNumber), now);
      } catch (error) {
        if (!(error instanceof ViesUnavailable)) throw error;
        await noteFailure(clientId, vatNumber, error, now);
        await inTransaction(db, (trx) => outbox.enqueue(trx, { kind: VAT_CHECK_KIND, payload: { clientId, vatNumber }, runAt: new Date(now.getTime() + retryDelaysMs[0]!) }));
      }
      return get(clientId);
    },
  };
}

export type VatChecks = ReturnType<typeof createVatChecks>;

/** Listens for changed numbers: an EU number is checked when the EU rules apply (else nothing is sent to VIES). */
export function checkChangedNumbers(events: EventBus, checks: Pick<VatChecks, 'requestIfUnchecked'>): void {
  events.on('client.vat_number_changed', async ({ clientId, vatNumber }, trx) => {
    await checks.requestIfUnchecked(trx, clientId, vatNumber, new Date());
  });
}
