// Tables of the cron module, the scheduled jobs (migration 022). Only this module writes them.

export interface CronStatusTable {
  /** Always 1: the table holds one row. */
  id: number;
  /** ISO 8601 UTC: when the last run of every job finished. */
  last_run_at: string;
}

export interface CronTables {
  cron_status: CronStatusTable;
}
