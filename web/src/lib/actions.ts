// The actions the browser may call, with their parameters and results, read from the OpenAPI document's types
// (api-schema.ts, generated: see test/browser/api-types.test.ts). A misspelt action, a missing or unknown parameter
// or a result read wrongly is a compile error, and the pages cannot drift from the server's schemas.
import type { paths } from './api-schema.ts';

/** Every action as `role/module/action`, e.g. `admin/serviceapikey/get`. */
export type Action = keyof paths extends infer Path ? (Path extends `/api/${infer Name}` ? Name : never) : never;

type Operation<A extends Action> = paths[`/api/${A}`]['post'];

/** The JSON body an action takes; actions without parameters take `{}`. */
export type Params<A extends Action> =
  Operation<A> extends { requestBody?: { content: { 'application/json': infer Body } } } ? Body : Record<string, never>;

/** What `result` holds in the action's successful answer. */
export type Result<A extends Action> = Operation<A>['responses'][200]['content']['application/json']['result'];

/** The parameters as `call`'s second argument: optional when the action requires none. */
export type ParamsArgument<A extends Action> = Record<string, never> extends Params<A> ? [params?: Params<A>] : [params: Params<A>];

/** Actions answering one page of a list (`list`, `page`, `pages`…): what `allPages` walks through. */
export type ListAction = { [A in Action]: Result<A> extends { list: unknown[]; pages: number } ? A : never }[Action];

/** One item of a list action's page. */
export type ListItem<A extends ListAction> = Result<A> extends { list: Array<infer Item> } ? Item : never;
