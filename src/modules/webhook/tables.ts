// Tables of the webhook module (migration 012): the endpoints, the deliveries to them and each attempt of a delivery.
// Only this module writes them.
import type { Generated } from 'kysely';

export interface WebhookTable {
  id: Generated<number>;
  url: string;
  description: string | null;
  /** JSON array of event types or ["*"]. */
  events: string;
  /** `whsec_…` sealed with the instance secret. */
  secret_enc: string;
  enabled: number;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookDeliveryTable {
  id: Generated<number>;
  webhook_id: number;
  outbox_id: number;
  message_id: string;
  event_type: string;
  body: string;
  last_status_code: number | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookAttemptTable {
  id: Generated<number>;
  delivery_id: number;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  created_at: string;
}

export interface WebhookTables {
  webhooks: WebhookTable;
  webhook_deliveries: WebhookDeliveryTable;
  webhook_attempts: WebhookAttemptTable;
}
