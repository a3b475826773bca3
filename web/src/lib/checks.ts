// Checks a form runs in the browser before sending, so people learn about a mistake at once and next to the field.
// Each returns the same 422 shape the server would (invalidField), so the form shows it the same way; the server
// checks again and has the last word.
import { invalidField, type ApiError } from './api.ts';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function required(param: string, value: string | undefined): ApiError | null {
  return value === undefined || value.trim() === '' ? invalidField(param, 'is required') : null;
}

export function email(param: string, value: string | undefined): ApiError | null {
  return required(param, value) ?? (EMAIL.test((value ?? '').trim()) ? null : invalidField(param, 'is not a valid e-mail address'));
}

/** The server's password rule (src/lib/passwords.ts), and the repeat matching. */
export function newPassword(password: string | undefined, confirm: string | undefined, param = 'password', confirmParam = 'password_confirm'): ApiError | null {
  const text = password ?? '';
  if (text === '') return invalidField(param, 'is required');
  if (text.length < 8 || text.length > 256) return invalidField(param, 'must be 8 to 256 characters long');
  if (!/[0-9]/.test(text)) return invalidField(param, 'must contain a digit');
  if (!/[a-z]/.test(text)) return invalidField(param, 'must contain a lower-case letter');
  if (!/[A-Z]/.test(text)) return invalidField(param, 'must contain an upper-case letter');
  if (text !== (confirm ?? '')) return invalidField(confirmParam, 'does not match password');
  return null;
}

/** Throws the first problem found, so `action.run` shows it instead of sending the form. */
export function check(...problems: Array<ApiError | null>): void {
  const first = problems.find((problem) => problem !== null);
  if (first !== undefined && first !== null) throw first;
}
