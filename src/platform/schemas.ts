// Building blocks for the actions' result schemas (ActionDef.result, CONTRACT §11): the shapes many actions share,
// so each module writes only what is its own.
import { Type, type TSchema } from '@sinclair/typebox';

/** A value or null (TypeBox has no shorthand; OpenAPI 3.1 reads it as `anyOf [T, null]`). */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** One page of a list (CONTRACT §5): {list, page, per_page, pages, total}. */
export const PageOf = <T extends TSchema>(item: T) =>
  Type.Object({
    list: Type.Array(item),
    page: Type.Integer(),
    per_page: Type.Integer(),
    pages: Type.Integer(),
    total: Type.Integer(),
    /** A common text search counted up to a bound (issue 13): `total` is the bound, the matches are more. */
    total_capped: Type.Optional(Type.Literal(true)),
  });

/** Actions that answer `true` once done (update, delete, mark…). */
export const Done = Type.Literal(true);

/** A moment as the API writes it: ISO 8601 in UTC, `2026-11-22T10:00:00Z` (CONTRACT §1). */
export const Timestamp = Type.String({ format: 'date-time' });

/** A calendar date, `YYYY-MM-DD`. */
export const CalendarDate = Type.String({ format: 'date' });

/** A money amount: a decimal string with the currency's precision (`"10.00"`), never a float. */
export const Money = Type.String({ pattern: '^-?[0-9]+(\\.[0-9]+)?$' });

const FILE_TYPE = 'x-tollgate-file';

/**
 * The result of an action that answers a file instead of the envelope (FileResult): the OpenAPI document describes
 * a binary body of `contentType`, and the suite's result check skips it.
 */
export const FileDownload = (contentType: string) => Type.Unsafe<never>({ [FILE_TYPE]: contentType });

/** The content type of a FileDownload schema, or undefined for an ordinary result schema. */
export function fileContentType(schema: TSchema): string | undefined {
  const value = (schema as Record<string, unknown>)[FILE_TYPE];
  return typeof value === 'string' ? value : undefined;
}

export const isFileResultSchema = (schema: TSchema): boolean => fileContentType(schema) !== undefined;
