// Every list behind a dashboard figure, by the figure's name: admin/stats/dashboard_list and the CSV exports
// (/api/admin/export/dashboard_<figure>.csv) read the same ones.
import { customerLists } from './customer-lists.ts';
import type { FigureList } from './list-types.ts';
import { moneyLists } from './money-lists.ts';
import { orderLists, overageList } from './order-lists.ts';

export const FIGURE_LISTS = {
  ...orderLists,
  ...moneyLists,
  ...customerLists,
  projected_overage: overageList,
} satisfies Record<string, FigureList>;

export type FigureName = keyof typeof FIGURE_LISTS;
export const FIGURE_NAMES = Object.keys(FIGURE_LISTS).toSorted() as FigureName[];

export const isFigure = (name: string): name is FigureName => Object.hasOwn(FIGURE_LISTS, name);
