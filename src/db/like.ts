// Search with LIKE where the text a user typed is matched literally: `%`, `_` and `\` are escaped and the expression
// names its escape character, which SQLite needs (it has no default) and PostgreSQL accepts.
import { sql, type Expression, type RawBuilder } from 'kysely';

/** A search shorter than this many characters is matched as "starts with": no trigram index answers it. */
export const CONTAINS_MIN = 3;

function escaped(text: string): string {
  return text.replace(/[\\%_]/g, '\\$&');
}

/** `%text%` with the LIKE wildcards in `text` escaped by a backslash. */
export function containsPattern(text: string): string {
  return `%${escaped(text)}%`;
}

/** Whether a staff list's `search` of this text is a prefix match (one or two characters) rather than "contains". */
export function isPrefixSearch(text: string): boolean {
  return text.length < CONTAINS_MIN;
}

/** The LIKE pattern of a staff list's search: `text%` for one or two characters, else `%text%`. */
export function searchPattern(text: string): string {
  return isPrefixSearch(text) ? `${escaped(text)}%` : containsPattern(text);
}

/** `expression LIKE pattern ESCAPE '\'`; `pattern` is bound as a parameter. */
export function likeEscaped(expression: Expression<string | null>, pattern: string): RawBuilder<boolean> {
  return sql<boolean>`${expression} like ${pattern} escape '\\'`;
}
