// The template renderer on its own: placeholders escaped for HTML (attributes included), sections, secret values kept
// out as markers, subjects on one line, the text part made from the HTML, and the checks staff edits go through.
import { describe, expect, it } from 'vitest';
import { isPlainAddress } from '../../../src/modules/email/service.ts';
import {
  htmlToText,
  MAIL_TEMPLATE_CODES,
  oneLine,
  placeholdersOf,
  renderTemplate,
  secretMarker,
  TEMPLATE_DEFAULTS,
  TemplateSyntaxError,
} from '../../../src/modules/email/templates.ts';

const AREA = 'https://billing.example.com/';

describe('renderTemplate', () => {
  it('escapes every HTML-significant character of a value, inside text and attributes', () => {
    const { html } = renderTemplate('s', '<p title="{{name}}">{{name}}</p>', { name: `<script>alert("x" & 'y')</script>` }, AREA);
    expect(html).toContain('<p title="&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;">');
    expect(html).not.toContain('<script>');
  });

  it('shows {{#x}} sections only when x is set and {{^x}} only when it is not', () => {
    const content = '{{#overdue}}late{{/overdue}}{{^overdue}}on time{{/overdue}}|{{#n}}n={{n}}{{/n}}';
    expect(htmlToText(renderTemplate('s', content, { overdue: 'yes', n: 0 }, AREA).html)).toContain('late|');
    expect(htmlToText(renderTemplate('s', content, { overdue: '', n: 3 }, AREA).html)).toContain('on time|n=3');
    expect(htmlToText(renderTemplate('s', content, {}, AREA).html)).toContain('on time|');
  });

  it('fills unknown or missing values with nothing rather than leaving braces', () => {
    expect(renderTemplate('Hi {{name}}!', '<p>{{missing}}x</p>', {}, AREA)).toMatchObject({ subject: 'Hi !' });
    expect(renderTemplate('s', '<p>{{missing}}x</p>', {}, AREA).html).toContain('<p>x</p>');
  });

  it('keeps secret values out: a marker in the body, "[link hidden]" in the subject', () => {
    const rendered = renderTemplate('Reset {{reset_url}}', '<a href="{{reset_url}}">reset</a>', { reset_url: 'https://x/#/reset/TOKEN123' }, AREA);
    expect(JSON.stringify(rendered)).not.toContain('TOKEN123');
    expect(rendered.html).toContain(`href="${secretMarker('reset_url')}"`);
    expect(rendered.subject).toBe('Reset [link hidden]');
  });

  it('puts the subject on one line and adds a link to the client area', () => {
    const rendered = renderTemplate('Order {{order_title}}', '<p>x</p>', { order_title: 'A\r\nBcc: evil@example.com\u2028B' }, AREA);
    expect(rendered.subject).toBe('Order A Bcc: evil@example.com B');
    expect(rendered.html).toContain(`<a href="${AREA}">Your client area</a>`);
    expect(rendered.text).toContain(`Your client area: ${AREA}`);
  });

  it('renders every default template with its sample values, linking somewhere in the client area', () => {
    for (const code of MAIL_TEMPLATE_CODES) {
      const template = TEMPLATE_DEFAULTS[code];
      const names = placeholdersOf(`${template.subject} ${template.content}`);
      for (const name of names) expect(['name', 'client_area_url', ...Object.keys(template.vars)], `${code} uses {{${name}}}`).toContain(name);
      const rendered = renderTemplate(template.subject, template.content, { ...template.vars, name: 'Jane' }, AREA);
      expect(rendered.subject.length, code).toBeGreaterThan(0);
      expect(rendered.text, code).toContain('Jane');
      expect(rendered.html, code).toMatch(/href="https:\/\/billing\.example\.com\//);
      expect(rendered.html, code).not.toMatch(/\{\{|\}\}/);
    }
  });
});

describe('htmlToText', () => {
  it('writes links as "label: URL", decodes entities once and drops tags', () => {
    expect(htmlToText('<p>Hello &lt;b&gt; &amp;amp;</p><p><a href="https://x.example/a?b=1&amp;c=2">Pay</a></p>')).toBe(
      'Hello <b> &amp;\n\nPay: https://x.example/a?b=1&c=2',
    );
    expect(htmlToText('<a href="https://x.example/">https://x.example/</a>')).toBe('https://x.example/');
    expect(htmlToText('<ul><li>one</li><li>two</li></ul>line<br>break<script>alert(1)</script>')).toBe('- one\n- two\n\nline\nbreak');
  });
});

describe('placeholdersOf', () => {
  it('lists the names and refuses unbalanced sections', () => {
    expect([...placeholdersOf('{{a}} {{#b}}{{c}}{{/b}} {{ d }}')]).toEqual(['a', 'b', 'c', 'd']);
    expect(() => placeholdersOf('{{#a}}x')).toThrow(TemplateSyntaxError);
    expect(() => placeholdersOf('x{{/a}}')).toThrow(TemplateSyntaxError);
    expect(() => placeholdersOf('{{#a}}{{#b}}{{/a}}{{/b}}')).toThrow(TemplateSyntaxError);
  });
});

describe('addresses and header text', () => {
  it('accepts one plain address and nothing else', () => {
    for (const ok of ['a@example.com', 'first.last+tag@sub.example.co.uk', "o'brien@example.com"]) expect(isPlainAddress(ok), ok).toBe(true);
    for (const bad of ['a@example.com,b@example.com', 'a@example.com\r\nBcc: b@example.com', 'Eve <eve@example.com>', '"a,b"@example.com', 'a b@example.com', 'a@-example.com', 'a@', `${'a'.repeat(250)}@example.com`]) {
      expect(isPlainAddress(bad), bad).toBe(false);
    }
  });

  it('turns control characters into spaces', () => {
    expect(oneLine('a\r\nb\tc\u0000d\u007f')).toBe('a b c d');
  });
});
