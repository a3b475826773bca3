// A payment provider's failure, logged once with what its support needs (its message with credentials redacted, its
// request id) and answered with a sentence safe for the payer and staff (HTTP 502). Shared by every gateway.
import { errors } from '../../platform/errors.ts';
import type { PaymentGateway } from './gateways.ts';

/** Anything in a provider's text that looks like a credential, even a redacted one, becomes "[redacted]". */
export function redactSecrets(text: string): string {
  return text.replace(/\b(sk|rk|pk)_(test|live)_[A-Za-z0-9*]*|\bwhsec_[A-Za-z0-9+/=*]*/g, '[redacted]');
}

/** What a provider said about a failure, for the log: its own message and the request id its support asks for. */
export interface ProviderFailure {
  message: string;
  requestId: string | null;
  status?: number | null;
  code?: string | null;
}

export type GatewayLog = (line: Record<string, unknown>) => void;

/** One JSON line on stderr, as the server's other error lines (level 50). */
export const writeGatewayLog: GatewayLog = (line) => {
  process.stderr.write(`${JSON.stringify({ level: 50, time: Date.now(), ...line })}\n`);
};

// A failure is logged once, by the first who sees it (the gateway, with the provider's details), even when the
// caller that turns it into a 502 reports it again.
const reported = new WeakSet<object>();

/**
 * Logs a payment provider's failure once: which gateway, doing what, the provider's message (credentials redacted)
 * and request id when the provider gave them. Never a key, never the request's body.
 */
export function reportGatewayFailure(gateway: string, action: string, error: unknown, provider: ProviderFailure | null = null, log: GatewayLog = writeGatewayLog): void {
  if (typeof error === 'object' && error !== null) {
    if (reported.has(error)) return;
    reported.add(error);
  }
  const message = provider?.message ?? (error instanceof Error ? error.message : String(error));
  log({
    msg: `payment gateway ${gateway}: ${action} failed`,
    gateway,
    action,
    provider_message: redactSecrets(message),
    request_id: provider?.requestId ?? null,
    ...(provider?.status !== undefined && { provider_status: provider.status }),
    ...(provider?.code !== undefined && { provider_code: provider.code }),
  });
}

/** The 502 for a failed call to `gateway`: its own safe sentence, or a generic one; reported to the log once. */
export function gatewayFailure(gateway: PaymentGateway, action: string, error: unknown, fallback: string): ReturnType<typeof errors.gatewayFailed> {
  reportGatewayFailure(gateway.code, action, error);
  return errors.gatewayFailed(gateway.describeFailure?.(error) ?? fallback);
}
