// Tables of the verifier integration (CONTRACT §11).

export interface ApiKeyUsageBatchTable {
  /** The SDK's id for one report_usage batch; unique, so a retry of the same batch adds nothing. */
  batch_id: string;
  /** The verifier (staff member) that reported it. */
  staff_id: number;
  /** Total uses the batch added. */
  uses: number;
  created_at: string;
}

export interface VerifierTables {
  api_key_usage_batches: ApiKeyUsageBatchTable;
}
