// Tables of the API key product. Filled in by the API key issue.

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ApiKeyTables {}
