// Every migration, in order. Add new ones at the end; never edit one that has shipped.
import type { Migration } from 'kysely';
import * as core from './001_core.ts';
import * as selling from './002_selling.ts';
import * as apikey from './003_apikey.ts';
import * as billing from './006_billing.ts';
import * as stripe from './007_stripe.ts';
import * as outbox from './008_outbox.ts';
import * as accounts from './009_accounts.ts';
import * as search from './010_search.ts';
import * as verifier from './011_verifier.ts';
import * as webhooks from './012_webhooks.ts';
import * as usageBilling from './013_usage_billing.ts';
import * as keys from './014_keys.ts';
import * as searchMore from './015_search_more.ts';
import * as searchSpeed from './016_search_speed.ts';
import * as planChanges from './017_plan_changes.ts';
import * as secondFactor from './018_second_factor.ts';
import * as invoiceNames from './020_invoice_names.ts';
import * as buyer from './021_buyer.ts';
import * as cronStatus from './022_cron_status.ts';
import * as lateRefunds from './025_late_refunds.ts';
import * as usageEvents from './026_usage_events.ts';
import * as usageMeterDays from './027_usage_meter_days.ts';
import * as usageCloseMeters from './028_usage_close_meters.ts';
import * as meterAlerts from './029_meter_alerts.ts';
import * as fossbillingIds from './031_fossbilling_ids.ts';
import * as credits from './032_credits.ts';
import * as prepaid from './033_prepaid.ts';
import * as trials from './034_trials.ts';
import * as creditNotes from './035_credit_notes.ts';
import * as creditTopUps from './036_credit_topups.ts';
import * as currencies from './038_currencies.ts';
import * as invoiceCreditApplied from './039_invoice_credit_applied.ts';
import * as statsIndexes from './040_stats_indexes.ts';
import * as statsRevenueDays from './041_stats_revenue_days.ts';
import * as keyOutcomes from './042_key_outcomes.ts';
import * as keyNotFound from './043_key_not_found.ts';
import * as portal from './044_portal.ts';
import * as activityLog from './046_activity_log.ts';
import * as sellingCurrencies from './048_selling_currencies.ts';
import * as invoiceTaxRules from './050_invoice_tax_rules.ts';
import * as vatChecks from './051_vat_checks.ts';
import * as statsLineRevenue from './052_stats_line_revenue.ts';
import * as statsRevenueRates from './053_stats_revenue_rates.ts';

export const migrations: Record<string, Migration> = {
  '001_core': core,
  '002_selling': selling,
  '003_apikey': apikey,
  '006_billing': billing,
  '007_stripe': stripe,
  '008_outbox': outbox,
  '009_accounts': accounts,
  '010_search': search,
  '011_verifier': verifier,
  '012_webhooks': webhooks,
  '013_usage_billing': usageBilling,
  '014_keys': keys,
  '015_search_more': searchMore,
  '016_search_speed': searchSpeed,
  '017_plan_changes': planChanges,
  '018_second_factor': secondFactor,
  '020_invoice_names': invoiceNames,
  '021_buyer': buyer,
  '022_cron_status': cronStatus,
  '025_late_refunds': lateRefunds,
  '026_usage_events': usageEvents,
  '027_usage_meter_days': usageMeterDays,
  '028_usage_close_meters': usageCloseMeters,
  '029_meter_alerts': meterAlerts,
  '031_fossbilling_ids': fossbillingIds,
  '032_credits': credits,
  '033_prepaid': prepaid,
  '034_trials': trials,
  '035_credit_notes': creditNotes,
  '036_credit_topups': creditTopUps,
  '038_currencies': currencies,
  '039_invoice_credit_applied': invoiceCreditApplied,
  '040_stats_indexes': statsIndexes,
  '041_stats_revenue_days': statsRevenueDays,
  '042_key_outcomes': keyOutcomes,
  '043_key_not_found': keyNotFound,
  '044_portal': portal,
  '046_activity_log': activityLog,
  '048_selling_currencies': sellingCurrencies,
  '050_invoice_tax_rules': invoiceTaxRules,
  '051_vat_checks': vatChecks,
  '052_stats_line_revenue': statsLineRevenue,
  '053_stats_revenue_rates': statsRevenueRates,
};
