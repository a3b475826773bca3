// Substring search with LIKE where the text a user typed is matched literally: `%`, `_` and `\` are escaped and the
// expression names its escape character, which SQLite needs (it has no default) and PostgreSQL accepts.
import { sql, type Expression, type RawBuilder } from 'kysely';

/** `%text%` with the LIKE wildcards in `text` escaped by a backslash. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, '\\$&')}%`;
}

/** `expression LIKE pattern ESCAPE '\'`; `pattern` is bound as a parameter. */
export function likeEscaped(expression: Expression<string | null>, pattern: string): RawBuilder<boolean> {
  return sql<boolean>`${expression} like ${pattern} escape '\\'`;
}
