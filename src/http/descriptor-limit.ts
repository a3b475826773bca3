// How many connections this process may hold (issue 20, M6). Every connection is a file descriptor; past the
// process's limit (`ulimit -n`) the server cannot accept anything, /healthz included. Node has no getrlimit, so the
// soft limit is read from /proc on Linux; elsewhere a documented default stands in and MAX_CONNECTIONS says better.
import { readFileSync } from 'node:fs';

/** What the limit is taken to be where /proc/self/limits cannot be read (macOS, the BSDs, a sandbox without /proc). */
export const ASSUMED_DESCRIPTOR_LIMIT = 1024;
/** "unlimited" in /proc: counted as this many, far above any connection count one process serves. */
const UNLIMITED = 1_048_576;

/** The soft limit on open files (`ulimit -n`) from a /proc/<pid>/limits text, or null when it names none. */
export function parseDescriptorLimit(limits: string): number | null {
  for (const line of limits.split('\n')) {
    if (!line.startsWith('Max open files')) continue;
    const soft = line.slice('Max open files'.length).trim().split(/\s+/)[0];
    if (soft === 'unlimited') return UNLIMITED;
    const value = Number(soft);
    return Number.isInteger(value) && value > 0 ? value : null;
  }
  return null;
}

/** This process's soft descriptor limit, or null when the system does not say (see ASSUMED_DESCRIPTOR_LIMIT). */
export function readDescriptorLimit(path = '/proc/self/limits'): number | null {
  try {
    return parseDescriptorLimit(readFileSync(path, 'utf8'));
  } catch {
    return null;
  }
}

/**
 * MAX_CONNECTIONS' default: the descriptor limit less a fifth of it, and at least 64, for everything else the process
 * opens (the database and its WAL files, PostgreSQL's pool of 10, Redis, outgoing mail, webhooks and Stripe calls,
 * logs). 1024 gives 819 connections, 256 gives 192, 65536 gives 52428. Never below 16.
 */
export function defaultMaxConnections(descriptorLimit: number | null): number {
  const limit = descriptorLimit ?? ASSUMED_DESCRIPTOR_LIMIT;
  return Math.max(16, limit - Math.max(64, Math.ceil(limit / 5)));
}
