// The clients behind the customer figures: those who signed up in the range, and those lost in it (customers.ts's
// rule, the same subquery, so the list's length is the figure).
import { nameOf, type FigureList } from './list-types.ts';
import { churnedQuery } from './customers.ts';
import type { DbNumber } from './list-types.ts';

const newCustomers: FigureList = {
  columns: ['client_id', 'email', 'name', 'company', 'country', 'created_at'],
  async read({ db, range }, offset, limit) {
    const base = db.selectFrom('clients').where('created_at', '>=', range.start).where('created_at', '<', range.end);
    const [rows, n] = await Promise.all([
      base.select(['id', 'email', 'first_name', 'last_name', 'company', 'country', 'created_at']).orderBy('created_at').orderBy('id').offset(offset).limit(limit).execute(),
      base.select((eb) => eb.fn.countAll<DbNumber>().as('n')).executeTakeFirstOrThrow(),
    ]);
    return {
      rows: rows.map((row) => ({ client_id: row.id, email: row.email, name: nameOf(row.first_name, row.last_name), company: row.company, country: row.country, created_at: row.created_at })),
      total: Number(n.n),
    };
  },
};

const churnedCustomers: FigureList = {
  columns: ['client_id', 'email', 'name', 'canceled_at'],
  async read({ db, range }, offset, limit) {
    const lost = churnedQuery(db, range).select((eb) => ['lost.client_id as client_id', eb.fn.max<string>('lost.canceled_at').as('canceled_at')]).groupBy('lost.client_id');
    const [rows, n] = await Promise.all([
      db.selectFrom(lost.as('lost_clients')).leftJoin('clients', 'clients.id', 'lost_clients.client_id').select(['lost_clients.client_id', 'lost_clients.canceled_at', 'clients.email', 'clients.first_name', 'clients.last_name']).orderBy('lost_clients.canceled_at').orderBy('lost_clients.client_id').offset(offset).limit(limit).execute(),
      db.selectFrom(lost.as('lost_clients')).select((eb) => eb.fn.countAll<DbNumber>().as('n')).executeTakeFirstOrThrow(),
    ]);
    return {
      rows: rows.map((row) => ({ client_id: row.client_id, email: row.email, name: row.first_name === null ? null : nameOf(row.first_name, row.last_name), canceled_at: row.canceled_at })),
      total: Number(n.n),
    };
  },
};

export const customerLists = { new_customers: newCustomers, churned_customers: churnedCustomers } satisfies Record<string, FigureList>;
