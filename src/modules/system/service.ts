// The system service: the settings staff edit (CONTRACT §8) and the company details shown on invoices. The only
// writer of `settings`. Reads come from an in-process copy of the whole (small) table, dropped when this process
// changes a setting and re-read at most CACHE_TTL_MS later otherwise, so another process's change shows within that.
// Secrets are sealed with the instance secret box and only ever leave this service through `secret(name)`.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { afterTransaction, inTransaction } from '../../platform/transaction.ts';
import { errors } from '../../platform/errors.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { nowIso } from '../../lib/time.ts';
import {
  normalizeSetting,
  PUBLIC_NAMES,
  readSetting,
  SECRET_NAMES,
  SETTING_NAMES,
  SETTINGS,
  type PublicName,
  type SecretName,
  type SettingName,
  type SettingValues,
} from '../../platform/settings-catalogue.ts';

export const CACHE_TTL_MS = 5000;
const COUNTER = 'invoice_next_number';

export interface Company {
  name: string | null;
  email: string | null;
  address_1: string | null;
  address_2: string | null;
  address_3: string | null;
  city: string | null;
  postcode: string | null;
  country: string | null;
  vat_number: string | null;
  logo_url: string | null;
}

export interface SystemServiceDeps {
  db: Kysely<Database>;
  secrets: Pick<SecretBox, 'encrypt' | 'decrypt'>;
  /** Defaults from the environment (config.settings). */
  defaults: Partial<Record<SettingName, string>>;
}

export function createSystemService({ db, secrets, defaults }: SystemServiceDeps) {
  let cache: { at: number; rows: Map<string, string> } | null = null;
  let generation = 0;
  // The last copy read or written, for callers that cannot wait (peek); never dropped, only replaced.
  let snapshot = new Map<string, string>();
  let refreshing = false;

  /**
   * The stored settings. Inside a transaction pass its handle: on SQLite the one connection is busy with it, and a
   * read through `db` would wait for it forever.
   */
  async function stored(handle: Kysely<Database> = db): Promise<Map<string, string>> {
    if (cache !== null && Date.now() - cache.at < CACHE_TTL_MS) return cache.rows;
    const started = generation;
    const rows = new Map((await handle.selectFrom('settings').select(['name', 'value']).execute()).map((row) => [row.name, row.value]));
    // A change made while we were reading would be lost: keep the copy only when none happened.
    if (started === generation) {
      cache = { at: Date.now(), rows };
      snapshot = rows;
    }
    return rows;
  }

  function invalidate(): void {
    generation += 1;
    cache = null;
  }

  function textOf(rows: Map<string, string>, name: SettingName): string {
    return rows.get(name) ?? defaults[name] ?? SETTINGS[name].fallback;
  }

  async function get<K extends PublicName>(name: K): Promise<SettingValues[K]> {
    return readSetting(name, textOf(await stored(), name)) as SettingValues[K];
  }

  /** A copy older than CACHE_TTL_MS is read again in the background; callers go on with the one they have. */
  function refreshInBackground(): void {
    if ((cache === null || Date.now() - cache.at >= CACHE_TTL_MS) && !refreshing) {
      refreshing = true;
      void stored()
        .catch(() => undefined)
        .finally(() => {
          refreshing = false;
        });
    }
  }

  // The last sealed text opened, so a hot caller (every payment, every mail) does not decrypt each time.
  const opened = new Map<string, { sealed: string; clear: string }>();

  /** A secret in clear from `rows`: a stored value is sealed, an environment default is not; null when unset. */
  function clearSecret(rows: Map<string, string>, name: SecretName): string | null {
    const text = textOf(rows, name);
    if (text === '') return null;
    if (!rows.has(name)) return text;
    const known = opened.get(name);
    if (known?.sealed === text) return known.clear;
    const clear = secrets.decrypt(text);
    opened.set(name, { sealed: text, clear });
    return clear;
  }

  /** Whose value of a secret is in force: staff's stored one, the environment's, or none. */
  function sourceOf(rows: Map<string, string>, name: SecretName): 'stored' | 'environment' | null {
    if (rows.has(name)) return 'stored';
    return (defaults[name] ?? '') !== '' ? 'environment' : null;
  }

  /** Ensures the counter row exists inside `trx`, so it can be locked and incremented. */
  async function ensureCounter(trx: Kysely<Database>): Promise<void> {
    const start = defaults[COUNTER] ?? SETTINGS[COUNTER].fallback;
    await trx
      .insertInto('settings')
      .values({ name: COUNTER, value: start, updated_at: nowIso() })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
  }

  return {
    get,

    /** Reads every setting once (at start-up), so `peek` answers stored values from the first request. */
    async preload(): Promise<void> {
      await stored();
    },

    /**
     * A setting's value without waiting, for synchronous callers (the manual gateway's instructions): the copy this
     * process last read or wrote. A copy older than CACHE_TTL_MS is refreshed in the background.
     */
    peek<K extends PublicName>(name: K): SettingValues[K] {
      refreshInBackground();
      return readSetting(name, textOf(snapshot, name)) as SettingValues[K];
    },

    /** The clear value of a secret setting (server side only), or null when it is not set. */
    async secret(name: SecretName): Promise<string | null> {
      return clearSecret(await stored(), name);
    },

    /**
     * A secret's clear value without waiting (the Stripe gateway, the mail transport: they read it at each use, so a
     * change takes effect without a restart): the copy this process last read or wrote, refreshed as `peek` is.
     */
    peekSecret(name: SecretName): string | null {
      refreshInBackground();
      return clearSecret(snapshot, name);
    },

    /** admin/system/settings_get: every public setting, and for each secret only whether it is set and by whom. */
    async all(): Promise<Record<string, unknown>> {
      invalidate();
      const rows = await stored();
      const out: Record<string, unknown> = {};
      for (const name of PUBLIC_NAMES) out[name] = readSetting(name, textOf(rows, name));
      for (const name of SECRET_NAMES) {
        out[`${name}_set`] = textOf(rows, name) !== '';
        out[`${name}_source`] = sourceOf(rows, name);
      }
      return out;
    },

    /** admin/system/settings_update: the named settings (others are ignored), all checked before any is saved. */
    async update(input: Record<string, unknown>): Promise<void> {
      const changes: Array<[SettingName, string]> = [];
      for (const name of SETTING_NAMES) {
        if (!Object.hasOwn(input, name) || input[name] === undefined || input[name] === null) continue;
        changes.push([name, normalizeSetting(name, input[name])]);
      }
      if (changes.length === 0) return;
      // The stored (sealed, for secrets) text of each change, for the snapshot.
      const written = new Map<string, string>();
      const now = nowIso();
      await inTransaction(db, async (trx) => {
        afterTransaction(trx, (committed) => {
          invalidate();
          if (!committed) return;
          // What was just written is the newest copy: peek sees it at once.
          const next = new Map(snapshot);
          for (const [name, text] of changes) {
            if (SETTINGS[name].kind === 'secret' && text === '') next.delete(name);
            else next.set(name, SETTINGS[name].kind === 'secret' ? (written.get(name) ?? text) : text);
          }
          snapshot = next;
        });
        for (const [name, text] of changes) {
          if (name === COUNTER) {
            // Numbers only move forward: a lower one would collide with numbers already given.
            await ensureCounter(trx);
            const result = await trx
              .updateTable('settings')
              .set({ value: text, updated_at: now })
              .where('name', '=', COUNTER)
              .where(sql<boolean>`cast(value as bigint) <= ${Number(text)}`)
              .executeTakeFirst();
            if (Number(result.numUpdatedRows) !== 1) throw errors.invalid(COUNTER, 'must not be lower than the next number already reached');
            continue;
          }
          if (SETTINGS[name].kind === 'secret' && text === '') {
            // Clearing a secret removes staff's value: the environment's (if any) is in force again.
            await trx.deleteFrom('settings').where('name', '=', name).execute();
            continue;
          }
          const value = SETTINGS[name].kind === 'secret' ? secrets.encrypt(text) : text;
          written.set(name, value);
          await trx
            .insertInto('settings')
            .values({ name, value, updated_at: now })
            .onConflict((oc) => oc.column('name').doUpdateSet({ value, updated_at: now }))
            .execute();
        }
      });
    },

    /** The seller's details; `trx` when called inside a transaction. */
    async company(trx: Kysely<Database> = db): Promise<Company> {
      const rows = await stored(trx);
      const text = (name: SettingName): string | null => {
        const value = textOf(rows, name);
        return value === '' ? null : value;
      };
      return {
        name: text('company_name'),
        email: text('company_email'),
        address_1: text('company_address_1'),
        address_2: text('company_address_2'),
        address_3: text('company_address_3'),
        city: text('company_city'),
        postcode: text('company_postcode'),
        country: text('company_country'),
        vat_number: text('company_vat_number'),
        logo_url: text('company_logo_url'),
      };
    },

    /**
     * The next invoice number (`<prefix><n>`), taken inside the caller's transaction: the counter row is incremented
     * there, so the row lock serialises concurrent payments on PostgreSQL (SQLite has one writer) and a rolled-back
     * payment gives its number back. Numbers are therefore unique and gapless.
     */
    async nextInvoiceNumber(trx: Kysely<Database>): Promise<string> {
      await ensureCounter(trx);
      const row = await trx
        .updateTable('settings')
        .set({ value: sql<string>`cast(cast(value as bigint) + 1 as text)`, updated_at: nowIso() })
        .where('name', '=', COUNTER)
        .returning('value')
        .executeTakeFirstOrThrow();
      const prefix = await trx.selectFrom('settings').select('value').where('name', '=', 'invoice_prefix').executeTakeFirst();
      afterTransaction(trx, invalidate);
      return `${prefix?.value ?? defaults.invoice_prefix ?? SETTINGS.invoice_prefix.fallback}${Number(row.value) - 1}`;
    },
  };
}

export type SystemService = ReturnType<typeof createSystemService>;
