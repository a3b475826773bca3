// Tables of the credit module (migrations 032, 033): the prepaid-credit ledger. Only this module writes them. Entries are
// immutable; a balance is the sum of an account's entries, never a stored number.
import type { Generated } from 'kysely';

export type CreditKind = 'top_up' | 'grant' | 'consume' | 'expire' | 'refund' | 'adjust';

/** One row per client and currency: what writers lock so spending from one balance is serialised. */
export interface CreditAccountTable {
  client_id: number;
  currency: string;
  created_at: string;
  /** Touched by each writer's lock (a no-op update takes the row lock on PostgreSQL). */
  locked_at: string | null;
}

export interface CreditEntryTable {
  id: Generated<number>;
  client_id: number;
  currency: string;
  kind: CreditKind;
  /** Signed minor units: a credit is positive, a debit negative. */
  amount: number;
  /** 1 for promotional credit (grants), 0 for paid. */
  promotional: Generated<number>;
  /** Grants only: when what is left of it expires (ISO 8601). */
  expires_at: string | null;
  /** Unique: the same source never writes twice. */
  idempotency_key: string;
  invoice_id: number | null;
  staff_id: number | null;
  note: string | null;
  /** The entry an `adjust` written by balance_delete compensates. */
  reverses_id: number | null;
  created_at: string;
}

/** What a debit took from which credit ("lot"): a lot's remainder is its amount less its allocations. */
export interface CreditAllocationTable {
  id: Generated<number>;
  debit_id: number;
  lot_id: number;
  amount: number;
}

/** A top-up pack staff offer (migration 036). */
export interface CreditPackTable {
  id: Generated<number>;
  title: string;
  amount: number;
  bonus: number;
  bonus_days: number | null;
  enabled: number;
  created_at: string;
  updated_at: string;
}

/** The pack a top-up invoice was issued for, as it was then. */
export interface CreditPackInvoiceTable {
  invoice_id: number;
  pack_id: number;
  client_id: number;
  bonus: number;
  bonus_days: number | null;
  created_at: string;
}

/** An account's auto-recharge and low-balance settings, and how many times each has crossed. */
export interface CreditWatchTable {
  client_id: number;
  currency: string;
  recharge_enabled: number;
  recharge_threshold: number | null;
  recharge_amount: number | null;
  recharge_crossings: Generated<number>;
  alert_amount: number | null;
  alert_crossings: Generated<number>;
  updated_at: string;
}

export type RechargeStatus = 'pending' | 'invoiced' | 'stopped';

/** One auto-recharge crossing and the top-up invoice its charge pays. */
export interface CreditRechargeTable {
  id: Generated<number>;
  client_id: number;
  currency: string;
  crossing: number;
  amount: number;
  status: RechargeStatus;
  invoice_id: number | null;
  created_at: string;
  updated_at: string;
}

/** Prepaid plans (migration 033): what an order's meter has drawn from the balance in a usage period so far. */
export interface CreditUsageDrawTable {
  order_id: number;
  meter: string;
  period_start: string;
  client_id: number;
  /** Minor units drawn so far: the priced cumulative quantity at the last draw (a high-water mark). */
  drawn: number;
  updated_at: string;
}

/** One row per depletion of a balance (migration 033): the `wallet.depleted` webhook goes once. */
export interface CreditDepletionTable {
  client_id: number;
  currency: string;
  /** The account's latest credit entry when it ran out (0: none). */
  after_entry_id: number;
  order_id: number;
  balance: number;
  created_at: string;
}

export interface CreditTables {
  credit_accounts: CreditAccountTable;
  credit_entries: CreditEntryTable;
  credit_allocations: CreditAllocationTable;
  credit_packs: CreditPackTable;
  credit_pack_invoices: CreditPackInvoiceTable;
  credit_watches: CreditWatchTable;
  credit_recharges: CreditRechargeTable;
  credit_usage_draws: CreditUsageDrawTable;
  credit_depletions: CreditDepletionTable;
}
