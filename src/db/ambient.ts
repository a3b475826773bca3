// The action's transaction (the audit log's same-transaction rule, docs/audit-log.md). A changing admin action runs
// inside one database transaction opened by the gateway; the services it calls keep their plain `db` handle and their
// own `inTransaction` calls, and this driver wrapper routes both into that one transaction while it is open:
//   - a plain statement (`db.updateTable(…)`) runs on the action's connection instead of taking a new one;
//   - a service's own transaction becomes a SAVEPOINT inside it (released on its commit, rolled back to on its
//     rollback), so a service that catches its own transaction's failure keeps working as before;
//   - on PostgreSQL a plain statement is wrapped in a savepoint too: a failed statement there would otherwise abort the
//     whole transaction, where before it failed alone (SQLite undoes only the failed statement by itself).
// Which transaction is "the action's" is carried by AsyncLocalStorage, so it follows the action's awaits and nothing
// else: another request, a timer started at boot, the outbox sender keep their own connections.
import { AsyncLocalStorage } from 'node:async_hooks';
import { CompiledQuery, type DatabaseConnection, type Dialect, type Driver, type Kysely, type QueryResult, type TransactionSettings } from 'kysely';

type Callback = (committed: boolean) => void;

interface ActionTransaction {
  driver: AmbientDriver;
  /** The connection of the action's transaction, once begun; null before and after. */
  connection: DatabaseConnection | null;
  /** Savepoints open on it (the services' own transactions), innermost last. */
  savepoints: string[];
  serial: number;
  /**
   * The last statement wrapped in its own savepoint, still running or done. Statements an action runs concurrently
   * (Promise.all) take turns here: interleaved, one's RELEASE would release the other's savepoint too, and the next
   * statement's fails ("savepoint does not exist") and aborts the action's transaction.
   */
  statementTurn: Promise<unknown>;
  /** Work waiting for the action's transaction to end (afterTransaction of the services' transactions). */
  callbacks: Callback[];
  /** Whether the action's own statements changed a row (its audit entry is written only then). */
  wrote: boolean;
  /** Writes that must outlive the action's transaction (`outsideAction`), run once it has ended, whatever its outcome. */
  outside: Array<() => Promise<unknown>>;
}

const WRITE_NODES = new Set(['InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode', 'MergeQueryNode']);
const WRITE_SQL = /^\s*(insert|update|delete|replace|merge)\b/i;

function changedRows(query: CompiledQuery, result: QueryResult<unknown>): boolean {
  const isWrite = WRITE_NODES.has(query.query.kind) || (query.query.kind === 'RawNode' && WRITE_SQL.test(query.sql));
  if (!isWrite) return false;
  const affected = result.numAffectedRows;
  return affected === undefined ? result.rows.length > 0 : affected > 0n;
}

const current = new AsyncLocalStorage<ActionTransaction>();
const drivers = new WeakMap<Kysely<never>, AmbientDriver>();

/** The statements the action's code runs outside its own transactions: a connection that shares the action's one. */
class SharedConnection implements DatabaseConnection {
  constructor(
    readonly action: ActionTransaction,
    private readonly statementSavepoints: boolean,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.execute<R>(query);
    if (!this.action.wrote && changedRows(query, result)) this.action.wrote = true;
    return result;
  }

  private async execute<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const raw = this.action.connection!;
    if (!this.statementSavepoints || this.action.savepoints.length > 0) return raw.executeQuery<R>(query);
    const turn = this.action.statementTurn.then(() => this.inSavepoint<R>(raw, query));
    this.action.statementTurn = turn.catch(() => undefined);
    return turn;
  }

  private async inSavepoint<R>(raw: DatabaseConnection, query: CompiledQuery): Promise<QueryResult<R>> {
    const name = `tg_stmt_${++this.action.serial}`;
    await raw.executeQuery(CompiledQuery.raw(`savepoint ${name}`));
    try {
      const result = await raw.executeQuery<R>(query);
      await raw.executeQuery(CompiledQuery.raw(`release savepoint ${name}`));
      return result;
    } catch (error) {
      await raw.executeQuery(CompiledQuery.raw(`rollback to savepoint ${name}`));
      throw error;
    }
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.action.connection!.streamQuery<R>(query, chunkSize);
  }
}

class AmbientDriver implements Driver {
  constructor(
    private readonly inner: Driver,
    private readonly statementSavepoints: boolean,
  ) {}

  /** The action transaction this call runs in, if it is open on this driver. */
  private active(): ActionTransaction | null {
    const action = current.getStore();
    return action !== undefined && action.driver === this && action.connection !== null ? action : null;
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const action = this.active();
    if (action !== null) return new SharedConnection(action, this.statementSavepoints);
    return this.inner.acquireConnection();
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    if (connection instanceof SharedConnection) {
      const name = `tg_trx_${++connection.action.serial}`;
      await connection.action.connection!.executeQuery(CompiledQuery.raw(`savepoint ${name}`));
      connection.action.savepoints.push(name);
      return;
    }
    // SQLite: BEGIN IMMEDIATE, so a transaction takes the write lock when it begins and waits for another process's
    // writer (busy_timeout). A deferred BEGIN that reads first and writes later gets SQLITE_BUSY at once, without
    // waiting, when another process (a CLI beside the server: backup, cron, import) wrote in between.
    if (this.statementSavepoints) await this.inner.beginTransaction(connection, settings);
    else await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    // The first transaction begun inside `inActionTransaction` is the action's own.
    const action = current.getStore();
    if (action !== undefined && action.driver === this && action.connection === null) action.connection = connection;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    if (connection instanceof SharedConnection) {
      const name = connection.action.savepoints.pop()!;
      await connection.action.connection!.executeQuery(CompiledQuery.raw(`release savepoint ${name}`));
      return;
    }
    this.end(connection);
    await this.inner.commitTransaction(connection);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (connection instanceof SharedConnection) {
      const name = connection.action.savepoints.pop()!;
      await connection.action.connection!.executeQuery(CompiledQuery.raw(`rollback to savepoint ${name}`));
      return;
    }
    this.end(connection);
    await this.inner.rollbackTransaction(connection);
  }

  /** The action's transaction is ending: from now on its code takes connections as any other code does. */
  private end(connection: DatabaseConnection): void {
    const action = current.getStore();
    if (action !== undefined && action.connection === connection) action.connection = null;
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    if (connection instanceof SharedConnection) return;
    await this.inner.releaseConnection(connection);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

/** The dialect with action transactions; `statementSavepoints` on PostgreSQL (see the top of this file). */
export function withActionTransactions(dialect: Dialect, statementSavepoints: boolean): { dialect: Dialect; register(db: Kysely<never>): void } {
  let driver: AmbientDriver | undefined;
  const wrapped: Dialect = {
    createDriver: () => (driver = new AmbientDriver(dialect.createDriver(), statementSavepoints)),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
  return {
    dialect: wrapped,
    register(db) {
      if (driver !== undefined) drivers.set(db, driver);
    },
  };
}

/**
 * Runs `work` in one transaction on `db` that every statement and transaction of `work`'s own async calls joins
 * (see the top of this file). On a database opened without the wrapper (a test's bare Kysely) it is a plain
 * transaction. Work registered with `deferToActionTransaction` runs once it has ended, outside it.
 */
export async function inActionTransaction<T>(db: Kysely<never>, work: (trx: Kysely<never>) => Promise<T>): Promise<T> {
  const driver = drivers.get(db);
  if (driver === undefined) return db.transaction().execute(work);
  const action: ActionTransaction = { driver, connection: null, savepoints: [], serial: 0, statementTurn: Promise.resolve(), callbacks: [], wrote: false, outside: [] };
  let committed = false;
  let result: T;
  try {
    result = await current.run(action, () => db.transaction().execute(work));
    committed = true;
  } finally {
    action.connection = null;
    // Outside the action's context: a sender woken here must not think it is still inside the action.
    current.exit(() => {
      for (const callback of action.callbacks) callback(committed);
    });
    // The records that must survive the action (a wrong second-factor code's count) are written now, after the commit
    // or the rollback, each in its own statements, before the caller hears the outcome. When the action failed, its
    // own error stays the answer (a failure to write one of them is then lost with it); after a commit, below, such a
    // failure is the answer.
    if (!committed) await writeOutside(action, true);
  }
  await writeOutside(action, false);
  return result;
}

/** Runs the writes kept by `outsideAction` once the action's transaction has ended; throws the first failure unless told to keep quiet. */
async function writeOutside(action: ActionTransaction, quiet: boolean): Promise<void> {
  let failure: { error: unknown } | null = null;
  for (const write of action.outside.splice(0)) {
    try {
      await current.exit(write);
    } catch (error) {
      failure ??= { error };
    }
  }
  if (failure !== null && !quiet) throw failure.error;
}

/**
 * Writes that must survive the action's failure (a failure counter, a lock: the ceilings against guessing). Inside an
 * open action transaction on `db`'s database, `write` is kept and run once that transaction has ended — committed or
 * rolled back — outside it, on a connection of its own, and the action's caller hears its outcome only after. Elsewhere
 * it runs at once. It is not written inside the action's transaction and not on a second connection beside it: on
 * SQLite one connection serves the process and the action holds it, so a write "beside" it would wait for the action
 * that is waiting for it (docs/audit-log.md). Code after the call must therefore not read what `write` wrote.
 */
export async function outsideAction(db: Kysely<never>, write: () => Promise<unknown>): Promise<void> {
  const action = current.getStore();
  const driver = drivers.get(db);
  if (action !== undefined && action.connection !== null && (driver === undefined || driver === action.driver)) {
    action.outside.push(write);
    return;
  }
  await write();
}

/**
 * Inside an open action transaction on `db`'s database: keeps `callback` until that transaction ends and returns
 * true. Returns false elsewhere, and the caller runs it as it would have.
 */
export function deferToActionTransaction(db: Kysely<never>, callback: Callback): boolean {
  const action = current.getStore();
  if (action === undefined || action.connection === null) return false;
  const driver = drivers.get(db);
  if (driver !== undefined && driver !== action.driver) return false;
  action.callbacks.push(callback);
  return true;
}

/**
 * Whether the action whose transaction is open here has changed a row so far (through its services: the audit
 * recorder's own reads and writes go through the action's `trx` and do not count). False outside one.
 */
export function actionTransactionWrote(): boolean {
  const action = current.getStore();
  return action !== undefined && action.connection !== null && action.wrote;
}
