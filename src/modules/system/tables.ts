// Tables of the system module: the instance settings an operator changes at run time (migration 006). Only this
// module writes them.

export interface SettingTable {
  name: string;
  value: string;
  updated_at: string;
}

export interface SystemTables {
  settings: SettingTable;
}
