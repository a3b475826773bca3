// Pagination as CONTRACT §5: page ≥ 1 (default 1), per_page 1–500 (default 100), result
// {list, page, per_page, pages, total}; a page past the end is an empty list.
import { Type } from '@sinclair/typebox';

export const DEFAULT_PER_PAGE = 100;
export const MAX_PER_PAGE = 500;

/** Spread into an action's parameter schema. */
export const paginationParams = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PER_PAGE })),
};

export interface PageRequest {
  page: number;
  perPage: number;
  offset: number;
}

export interface Page<T> {
  list: T[];
  page: number;
  per_page: number;
  pages: number;
  total: number;
  /** Present on a common text search counted only up to a bound: `total` is that bound, the matches are more. */
  total_capped?: true;
}

export function pageRequest(params: { page?: number | undefined; per_page?: number | undefined }): PageRequest {
  const page = params.page ?? 1;
  const perPage = params.per_page ?? DEFAULT_PER_PAGE;
  return { page, perPage, offset: (page - 1) * perPage };
}

export function toPage<T>(request: PageRequest, total: number, list: T[], capped = false): Page<T> {
  return { list, page: request.page, per_page: request.perPage, pages: Math.ceil(total / request.perPage), total, ...(capped && { total_capped: true as const }) };
}
