// What the first start prints about the administrator it created (src/first-admin-notice.ts): the generated
// credentials, never a value the operator chose, and the admin panel's URL built on PUBLIC_URL. The real first start
// (scripts/start.mjs, default settings) is checked in test/docs/readme-walkthrough.test.ts.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { firstAdminNotice } from '../../src/first-admin-notice.ts';

const generated = { email: 'admin@tollgate.local', password: 'generated-Pass1', apiToken: 'T0kenT0kenT0kenT0kenT0kenT0ken12' };

describe('the first administrator notice', () => {
  it('prints the generated credentials and the admin URL', () => {
    expect(firstAdminNotice(generated, { publicUrl: 'http://localhost:8080', apiTokenGiven: false })).toEqual([
      'Created the first administrator:',
      '  e-mail:    admin@tollgate.local',
      '  password:  generated-Pass1',
      '  API token: T0kenT0kenT0kenT0kenT0kenT0ken12',
      '  admin URL: http://localhost:8080/admin',
    ]);
  });

  it('builds the URL on PUBLIC_URL as the config reads it (a trailing slash dropped, a path kept)', () => {
    for (const [raw, url] of [
      ['https://billing.example.com/', 'https://billing.example.com/admin'],
      ['https://example.com/billing', 'https://example.com/billing/admin'],
    ] as const) {
      const { publicUrl } = loadConfig({ PUBLIC_URL: raw });
      expect(firstAdminNotice(generated, { publicUrl, apiTokenGiven: false }).at(-1)).toBe(`  admin URL: ${url}`);
    }
    // Unset, PUBLIC_URL follows PORT.
    const { publicUrl } = loadConfig({ PORT: '9123' });
    expect(firstAdminNotice(generated, { publicUrl, apiTokenGiven: false }).at(-1)).toBe('  admin URL: http://localhost:9123/admin');
  });

  it('never echoes a password or token the operator set, but still says where to log in', () => {
    const lines = firstAdminNotice(
      { email: 'ops@example.com', password: null, apiToken: 'ChosenChosenChosenChosenChosen12' },
      { publicUrl: 'https://billing.example.com', apiTokenGiven: true },
    );
    expect(lines).toEqual([
      'Created the first administrator:',
      '  e-mail:    ops@example.com',
      '  admin URL: https://billing.example.com/admin',
    ]);
    expect(lines.join('\n')).not.toContain('Chosen');
  });
});
