// What every generated client's purchase flow is given and answers (test/http/openapi-generators.test.ts).
export interface FlowInput {
  baseUrl: string;
  clientToken: string;
  adminToken: string;
}

export interface FlowOutcome {
  /** The invoice total before payment, a decimal string. */
  total: string;
  /** Whether guest/serviceapikey/check said the bought key was valid, after payment and after staff disabled it. */
  validAfterPayment: boolean;
  validAfterDisable: boolean;
}

export const basic = (user: 'admin' | 'client', token: string): string => `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}`;

export function fail(step: string, error: unknown): never {
  throw new Error(`${step} failed: ${JSON.stringify(error)}`);
}
