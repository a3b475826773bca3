// A parameter that cannot be used, found by a pure helper (money, rates, dates). lib/ knows nothing of the API, so it
// throws this plain error; the gateway answers it as the catalogue's 422 (`asApiError` in src/platform/errors.ts).
export class InvalidInput extends Error {
  constructor(
    readonly param: string,
    readonly problem: string,
  ) {
    super(`Parameter "${param}" ${problem}`);
    this.name = 'InvalidInput';
  }
}
