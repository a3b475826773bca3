// i18n-iso-countries with English names only. Its default entry registers every one of its ~80 languages: 0.9 MB of
// the compiled server, read and run at every start (issue 13's cold start), for names Tollgate shows in English.
import { createRequire } from 'node:module';
import isoCountries, { type LocaleData } from 'i18n-iso-countries/index.js';

isoCountries.registerLocale(createRequire(import.meta.url)('i18n-iso-countries/langs/en.json') as LocaleData);

export { isoCountries };
