// What the outbox hands to the modules that queue through it: the status of a message. Declared with the table
// (tables.ts is a leaf the schema gathers); re-exported here because another module may not import our tables.ts.
export type { OutboxStatus } from './tables.ts';
