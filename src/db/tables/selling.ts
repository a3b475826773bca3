// Tables of selling: products, carts, orders, invoices, transactions. Filled in by the selling issue.

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface SellingTables {}
