// The API's semantic version (CONTRACT §1): returned by guest/system/version and sent as X-Tollgate-Version.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './root.ts';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

export const VERSION: string = pkg.version;
