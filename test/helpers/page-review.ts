// What issue 25's pages must show at both widths: no serious or critical axe-core violation, and (when asked) a
// screenshot of each width for docs/screenshots/. One helper so every page is looked at the same way.
/// <reference lib="dom" />
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Page } from 'playwright-core';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The widths the docs show: a laptop and a phone. */
export const REVIEW_WIDTHS = [
  { suffix: '1280', width: 1280, height: 800 },
  { suffix: '390', width: 390, height: 844 },
] as const;

/** Set `UPDATE_SCREENSHOTS=1` to rewrite docs/screenshots/ from a test run; otherwise nothing is written there. */
const WRITE_DOC_SHOTS = process.env['UPDATE_SCREENSHOTS'] === '1';
const DOC_SHOTS = join(process.cwd(), 'docs', 'screenshots');

/** axe-core's serious and critical violations on the page as it is now, as rule ids. */
export async function seriousViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const runner = (window as unknown as { axe: { run: (context: Document) => Promise<{ violations: Array<{ id: string; impact: string | null }> }> } }).axe;
    const result = await runner.run(document);
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id);
  });
}

/**
 * Shows the page at each review width, waits for `ready` there, and returns axe's serious or critical violations per
 * width (an empty list is the pass). With UPDATE_SCREENSHOTS=1 it also writes docs/screenshots/<name>-<width>.png.
 */
export async function reviewAtBothWidths(page: Page, name: string, ready: () => Promise<void>): Promise<Record<string, string[]>> {
  const found: Record<string, string[]> = {};
  for (const { suffix, width, height } of REVIEW_WIDTHS) {
    await page.setViewportSize({ width, height });
    await ready();
    found[suffix] = await seriousViolations(page);
    if (WRITE_DOC_SHOTS) await page.screenshot({ path: join(DOC_SHOTS, `${name}-${suffix}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  return found;
}
