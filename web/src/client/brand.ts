// The operator's brand in the client area (issue 21): the company name (and logo) from guest/system/company in the
// page title, the header and the footer, once staff set them; a neutral "Client area" before. The footer links to
// the staff login only when the `show_staff_login_link` setting asks for it. Nothing here says "Tollgate".
import { html } from 'htm/preact';
import { call } from '../lib/api.ts';
import { Link } from '../lib/router.ts';
import { createStore, useStore } from '../lib/store.ts';

export interface Brand {
  name: string | null;
  logo_url: string | null;
  show_staff_login_link: boolean;
}

/** undefined while loading (nothing is shown in place of a name meanwhile, so no other name flashes). */
export const brand = createStore<Brand | undefined>(undefined);

const NEUTRAL = 'Client area';

/** Reads the company once per page load and names the document after it. */
export async function loadBrand(): Promise<void> {
  try {
    const company = await call('guest/system/company');
    brand.set({ name: company.name, logo_url: company.logo_url, show_staff_login_link: company.show_staff_login_link });
  } catch {
    brand.set({ name: null, logo_url: null, show_staff_login_link: false });
  }
  document.title = brand.get()?.name ?? NEUTRAL;
}

export function BrandLink() {
  const current = useStore(brand);
  if (current === undefined) return html`<a href="/" class="brand" aria-busy="true"> </a>`;
  const name = current.name ?? NEUTRAL;
  return html`<${Link} href="/" class="brand">
    ${current.logo_url ? html`<img src=${current.logo_url} alt="" class="brand-logo" />` : null}${name}
  <//>`;
}

export function Footer() {
  const current = useStore(brand);
  return html`<footer class="bottom" data-testid="client-footer">
    ${current?.name ?? ''}${current?.show_staff_login_link ? html`${current.name ? ' · ' : ''}<a href="/admin">Staff login</a>` : null}
  </footer>`;
}
