// The dashboard figures' CSV exports, served by the export route beside the lists' (src/http/export-route.ts):
// /api/admin/export/dashboard_<figure>.csv?from=&to= → the records behind that figure for the range, with the
// permission the dashboard needs. `withFigureExports` puts them in front of the export module's own, so the route
// and the composition root see one `request(file)`.
import { errors } from '../../platform/errors.ts';
import { STATS_PERMISSION } from './api.ts';
import { isFigure } from './figure-lists.ts';
import type { StatsService } from './service.ts';

export interface CsvExport {
  kind: string;
  permission: string;
  rows(params: Record<string, unknown>): AsyncGenerator<string>;
}

/** A day parameter as the CSV form sends it: absent, empty, or text (checked by the range). */
function dayParam(params: Record<string, unknown>, name: 'from' | 'to'): string | undefined {
  const value = params[name];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw errors.invalid(name, 'must be a date (YYYY-MM-DD)');
  return value;
}

export function withFigureExports<E extends { request(file: string): CsvExport | undefined }>(base: E, stats: Pick<StatsService, 'csv'>): Omit<E, 'request'> & { request(file: string): CsvExport | undefined } {
  return {
    ...base,
    request(file: string): CsvExport | undefined {
      const figure = /^dashboard_([a-z_]+)\.csv$/.exec(file)?.[1];
      if (figure === undefined || !isFigure(figure)) return base.request(file);
      return {
        kind: `dashboard_${figure}`,
        permission: STATS_PERMISSION,
        rows: (params) => stats.csv(figure, { from: dayParam(params, 'from'), to: dayParam(params, 'to') }),
      };
    },
  };
}
