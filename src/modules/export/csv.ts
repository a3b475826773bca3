// CSV text (RFC 4180) that is safe to open in a spreadsheet: every cell is quoted, and a cell a spreadsheet would
// run as a formula (starting with = + - @, or a tab or carriage return that some readers strip first) is prefixed
// with an apostrophe (OWASP "CSV injection").
const FORMULA_START = /^[=+\-@\t\r]/;

export type Cell = string | number | null | undefined;

export function csvCell(value: Cell): string {
  if (value === null || value === undefined) return '""';
  // Numbers are data the export itself produced (ids, counts): never a formula, so negative numbers stay numbers.
  const text = typeof value === 'number' ? String(value) : FORMULA_START.test(value) ? `'${value}` : value;
  return `"${text.replace(/"/g, '""')}"`;
}

export function csvLine(cells: readonly Cell[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}
