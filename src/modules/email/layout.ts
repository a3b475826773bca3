// The operator's brand in every mail (issue 21): the sender's display name is the company name, and the message
// sits in a simple layout — the logo and the company name on top, the company's name and address at the foot, with
// the link to the client area. Nothing says "Tollgate". Pure: the brand comes in, text goes out.
import { escapeHtml, oneLine } from './templates.ts';

export interface MailBrand {
  /** The company name, or null when not set. */
  name: string | null;
  logoUrl: string | null;
  /** The postal address, one line per entry (street lines, postcode and city, country). */
  address: string[];
}

export const NO_BRAND: MailBrand = { name: null, logoUrl: null, address: [] };

/** The brand from the company settings (`settings.company()`). */
export function brandOf(company: {
  name: string | null;
  logo_url: string | null;
  address_1: string | null;
  address_2: string | null;
  address_3: string | null;
  postcode: string | null;
  city: string | null;
  country: string | null;
}): MailBrand {
  const cityLine = [company.postcode, company.city].filter((part) => part !== null && part !== '').join(' ');
  const address = [company.address_1, company.address_2, company.address_3, cityLine, company.country].filter(
    (line): line is string => line !== null && line !== '',
  );
  return { name: company.name, logoUrl: company.logo_url, address };
}

/**
 * The From header: MAIL_FROM's address under the company name once it is set; MAIL_FROM as given otherwise. The
 * name is put on one line and quoted, so no character in it can add an address or a header.
 */
export function senderOf(mailFrom: string, brand: MailBrand): string {
  if (brand.name === null || brand.name === '') return mailFrom;
  const address = /<([^<>]+)>\s*$/.exec(mailFrom)?.[1] ?? mailFrom.trim();
  const name = oneLine(brand.name).replace(/["\\]/g, (char) => `\\${char}`);
  return `"${name}" <${address}>`;
}

/** The whole HTML message around a rendered body. */
export function mailLayout(body: string, brand: MailBrand, clientAreaUrl: string): string {
  const name = brand.name === null || brand.name === '' ? null : escapeHtml(brand.name);
  const logo = brand.logoUrl === null || brand.logoUrl === '' ? '' : `<img src="${escapeHtml(brand.logoUrl)}" alt="${name ?? ''}" style="max-height: 48px;"><br>`;
  const header = logo === '' && name === null ? '' : `<div style="margin-bottom: 1em;">${logo}${name === null ? '' : `<strong style="font-size: 1.2em;">${name}</strong>`}</div>`;
  const address = [...(name === null ? [] : [name]), ...brand.address.map(escapeHtml)].join('<br>');
  return (
    '<!doctype html><html><body style="font-family: sans-serif; line-height: 1.5; color: #222;">' +
    header +
    body +
    `<hr><p style="font-size: 0.9em; color: #555;"><a href="${escapeHtml(clientAreaUrl)}">Your client area</a></p>` +
    (address === '' ? '' : `<p style="font-size: 0.8em; color: #777;">${address}</p>`) +
    '</body></html>'
  );
}
