// Developers → SDK quick start: the code an operator pastes into their API server, with this instance's own base URL
// (PUBLIC_URL, read from guest/system/company) so it works as shown.
import { html } from 'htm/preact';
import { call } from '../lib/api.ts';
import { ErrorMessage, Loading, useLoad } from '../lib/ui.ts';
import { pythonQuickStarts } from './quick-start-python.ts';
import { phpQuickStart } from './quick-start-php.ts';

const IMPORT = (framework: string) => `import { Tollgate } from '@tollgate/sdk';
import { tollgate${framework} } from '@tollgate/sdk/${framework.toLowerCase()}';`;
const CLIENT = (baseUrl: string) => `const tollgate = new Tollgate({ baseUrl: '${baseUrl}', token: process.env.TOLLGATE_VERIFIER_TOKEN! });`;

/** The snippets for one base URL: [heading, language, code]. */
export function quickStarts(baseUrl: string): Array<[string, string, string]> {
  return [
    [
      'Express',
      'ts',
      `import express from 'express';
${IMPORT('Express')}
${CLIENT(baseUrl)}
const app = express().use(tollgateExpress(tollgate));
app.get('/data', (req, res) => res.json({ tier: req.tollgate.config?.tier }));`,
    ],
    [
      'Fastify',
      'ts',
      `import Fastify from 'fastify';
${IMPORT('Fastify')}
${CLIENT(baseUrl)}
const app = Fastify().decorateRequest('tollgate', null).addHook('preHandler', tollgateFastify(tollgate));
app.get('/data', async (request) => ({ tier: request.tollgate.config?.tier }));`,
    ],
    [
      'Hono',
      'ts',
      `import { Hono } from 'hono';
import { Tollgate, type VerifyResult } from '@tollgate/sdk';
import { tollgateHono } from '@tollgate/sdk/hono';
${CLIENT(baseUrl)}
const app = new Hono<{ Variables: { tollgate: VerifyResult } }>().use(tollgateHono(tollgate));
app.get('/data', (c) => c.json({ tier: c.get('tollgate').config?.tier }));`,
    ],
    ...pythonQuickStarts(baseUrl),
    phpQuickStart(baseUrl),
    [
      'Plain HTTP (any language)',
      'sh',
      `curl -s -u "admin:$TOLLGATE_VERIFIER_TOKEN" ${baseUrl}/api/admin/serviceapikey/get_info \\
  -H 'content-type: application/json' -d '{"key": "<the key your user sent>", "ip": "<the user address>"}'
# → {"result": {"valid": 1, "reason": "VALID", "config": {…}, "usage": {…}, "order_id": 12, "key_id": 3}, "error": null}`,
    ],
  ];
}

export function QuickStartSection() {
  const company = useLoad(() => call('guest/system/company'), []);
  return html`<section aria-labelledby="quick-start-heading">
    <h2 id="quick-start-heading">SDK quick start</h2>
    <${ErrorMessage} error=${company.error} />
    ${company.data === undefined
      ? company.loading
        ? html`<${Loading} />`
        : null
      : html`<p>
            This instance's base URL is <code data-testid="base-url">${company.data.public_url}</code> (set by <code>PUBLIC_URL</code>). Add the SDK
            (<code>@tollgate/sdk</code>, in the Tollgate repository's <code>packages/sdk</code>) to your server (Python: <code>pip install</code> its <code>packages/sdk-python</code>) and put a verifier token in <code>TOLLGATE_VERIFIER_TOKEN</code>. The middleware reads the key
            from <code>X-API-Key</code> or <code>Authorization: Bearer</code>, answers 401 or 429 itself, and attaches the result to the request.
          </p>
          ${quickStarts(company.data.public_url).map(
            ([heading, language, code]) => html`<h3>${heading}</h3>
              <pre><code class=${`language-${language}`}>${code}</code></pre>`,
          )}`}
  </section>`;
}
