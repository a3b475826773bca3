// The API's semantic version (CONTRACT §1): returned by guest/system/version and sent as X-Tollgate-Version.
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

export const VERSION: string = pkg.version;
