// The admin panel (served at /admin): dashboard, clients, products, orders, invoices, keys, staff and groups, profile.
import { html, render } from 'htm/preact';
import { useState } from 'preact/hooks';
import '../style.css';
import { ApiError, call, describeError, onAuthLost } from '../lib/api.ts';
import { Link, match, navigate, useLocation } from '../lib/router.ts';
import { createStore, useStore } from '../lib/store.ts';
import { Button, Field, FormError, Loading, useAction, useLoad } from '../lib/ui.ts';
import { loginReason, refreshStaff, staff } from './common.ts';
import { CodeField, ForgotPasswordForm, leaveHashRoute, needsSecondFactor, ResetPasswordForm, useHashRoute } from '../lib/security.ts';
import { DashboardPage } from './dashboard.ts';
import { ClientPage, ClientsPage } from './clients.ts';
import { ProductPage, ProductsPage } from './products.ts';
import { InvoicePage, InvoicesPage, OrderPage, OrdersPage } from './orders.ts';
import { KeyPage, KeysPage } from './keys.ts';
import { CouponsPage, SettingsPage, TaxesPage } from './billing.ts';
import { AdminProfilePage, GroupsPage, StaffMemberPage, StaffPage } from './staff.ts';
import { StaffConfirmEmailPage } from './own-email.ts';
import { TransactionsPage } from './transactions.ts';
import { EmailPage, EmailsPage, TemplatePage, TemplatesPage } from './email.ts';
import { DevelopersPage } from './developers.ts';
import { MailBanner } from './mail-banner.ts';

const pageError = createStore<unknown>(null);

onAuthLost(() => {
  if (staff.get()) {
    loginReason.set('Your session has ended. Please log in again.');
    staff.set(null);
  }
});

const NAV = [
  ['/admin', 'Dashboard'],
  ['/admin/clients', 'Clients'],
  ['/admin/products', 'Products'],
  ['/admin/orders', 'Orders'],
  ['/admin/invoices', 'Invoices'],
  ['/admin/transactions', 'Transactions'],
  ['/admin/keys', 'Keys'],
  ['/admin/email', 'Mail'],
  ['/admin/coupons', 'Coupons'],
  ['/admin/taxes', 'Taxes'],
  ['/admin/settings', 'Settings'],
  ['/admin/developers', 'Developers'],
  ['/admin/staff', 'Staff'],
  ['/admin/profile', 'Profile'],
] as const;

function Header() {
  const me = useStore(staff);
  const { path } = useLocation();
  const [busy, setBusy] = useState(false);
  // The operator's name, not ours (issue 21): "Tollgate" is only in the footer.
  const company = useLoad(() => call('guest/system/company'), []);
  const title = company.data?.name ? `${company.data.name} admin` : 'Admin';
  if (company.data !== undefined) document.title = title;
  const logout = async (): Promise<void> => {
    setBusy(true);
    try {
      await call('admin/profile/logout');
    } catch {
      // Already logged out.
    } finally {
      setBusy(false);
    }
    staff.set(null);
    navigate('/admin');
  };
  return html`<header class="top">
    <div class="inner">
      <${Link} href="/admin" class="brand">${title}<//>
      ${me
        ? html`<nav aria-label="Admin">
            <ul>
              ${NAV.map(([href, label]) => html`<li><${Link} href=${href} current=${href === '/admin' ? path === '/admin' : path.startsWith(href)}>${label}<//></li>`)}
              <li><button type="button" onClick=${logout} disabled=${busy} aria-busy=${busy ? 'true' : 'false'}>${busy ? 'Working…' : 'Log out'}</button></li>
            </ul>
          </nav>
          <span class="who">Signed in as ${me.email}</span>`
        : null}
    </div>
  </header>`;
}

function LoginPage() {
  const reason = useStore(loginReason);
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [needCode, setNeedCode] = useState(false);
  const [code, setCode] = useState('');
  const [forgot, setForgot] = useState(false);
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      try {
        await call('guest/staff/login', { email, password, ...(needCode && { code: code.trim() }) });
      } catch (error) {
        // 207: the password was right; the account wants its two-factor code.
        if (!needsSecondFactor(error)) throw error;
        setNeedCode(true);
        return;
      }
      loginReason.set(null);
      pageError.set(null);
      await refreshStaff();
    });
  };
  return html`<h1>Staff log in</h1>
    ${reason !== null ? html`<p class="error" role="alert">${reason}</p>` : null}
    <form class="card" onSubmit=${submit} novalidate>
      <${Field} label="E-mail" name="email" type="email" autocomplete="username" required value=${email} onInput=${setEmail} error=${action.error} />
      <${Field} label="Password" name="password" type="password" autocomplete="current-password" required value=${password} onInput=${setPassword} error=${action.error} />
      ${needCode ? html`<${CodeField} value=${code} onInput=${setCode} error=${action.error} />` : null}
      <${FormError} error=${action.error} fields=${['email', 'password', 'code']} />
      <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>${needCode ? 'Verify and log in' : 'Log in'}<//></div>
    </form>
    ${forgot
      ? html`<${ForgotPasswordForm} path="guest/staff/passwordreset" />`
      : html`<p><button type="button" class="link" onClick=${() => setForgot(true)}>Forgot password?</button></p>`}
    <p>The first administrator's e-mail and password are printed by the server on its first start (or set with TOLLGATE_ADMIN_EMAIL and TOLLGATE_ADMIN_PASSWORD).</p>`;
}

/** Opened from the staff reset mail: `/admin#/reset/<token>`. */
function ResetPage({ hash }: { hash: string }) {
  return html`<h1>Reset your staff password</h1>
    <${ResetPasswordForm} path="guest/staff/update_password" hash=${hash} onDone=${() => leaveHashRoute('/admin')} />`;
}

function Routes() {
  const { path } = useLocation();
  const me = useStore(staff);
  const fromMail = useHashRoute();
  if (fromMail?.name === 'reset') return html`<${ResetPage} hash=${fromMail.token} />`;
  if (fromMail?.name === 'confirm-email') return html`<${StaffConfirmEmailPage} hash=${fromMail.token} />`;
  if (me === undefined) return html`<${Loading} />`;
  if (me === null) return html`<${LoginPage} />`;
  if (path === '/admin') return html`<${DashboardPage} />`;
  if (path === '/admin/clients') return html`<${ClientsPage} />`;
  if (path === '/admin/products') return html`<${ProductsPage} />`;
  if (path === '/admin/orders') return html`<${OrdersPage} />`;
  if (path === '/admin/invoices') return html`<${InvoicesPage} />`;
  if (path === '/admin/transactions') return html`<${TransactionsPage} />`;
  if (path === '/admin/keys') return html`<${KeysPage} />`;
  if (path === '/admin/coupons') return html`<${CouponsPage} />`;
  if (path === '/admin/taxes') return html`<${TaxesPage} />`;
  if (path === '/admin/settings') return html`<${SettingsPage} />`;
  if (path === '/admin/staff') return html`<${StaffPage} />`;
  if (path === '/admin/groups') return html`<${GroupsPage} />`;
  if (path === '/admin/profile') return html`<${AdminProfilePage} />`;
  if (path === '/admin/email') return html`<${EmailsPage} />`;
  if (path === '/admin/email/templates') return html`<${TemplatesPage} />`;
  if (path === '/admin/developers') return html`<${DevelopersPage} />`;
  const template = match('/admin/email/templates/:code', path);
  if (template !== null && /^[a-z_]+$/.test(template.code ?? '')) return html`<${TemplatePage} code=${template.code} />`;
  const routes = [
    ['/admin/clients/:id', ClientPage],
    ['/admin/products/:id', ProductPage],
    ['/admin/orders/:id', OrderPage],
    ['/admin/invoices/:id', InvoicePage],
    ['/admin/keys/:id', KeyPage],
    ['/admin/staff/:id', StaffMemberPage],
    ['/admin/email/:id', EmailPage],
  ] as const;
  for (const [pattern, Page] of routes) {
    const params = match(pattern, path);
    if (params !== null && /^\d+$/.test(params.id ?? '')) return html`<${Page} id=${Number(params.id)} />`;
  }
  return html`<h1>Page not found</h1><p><${Link} href="/admin">Back to the dashboard<//>.</p>`;
}

function App() {
  const error = useStore(pageError);
  const me = useStore(staff);
  return html`
    <${Header} />
    <main id="main" tabindex="-1">
      ${me ? html`<${MailBanner} />` : null}
      ${error !== null ? html`<p class="error" role="alert">${describeError(error)}</p>` : null}
      <${Routes} />
    </main>
    <footer class="bottom">Tollgate admin · <a href="/">Client area</a> · <a href="/api/docs">API reference</a></footer>
  `;
}

async function start(): Promise<void> {
  render(html`<${App} />`, document.getElementById('app')!);
  try {
    // Asked first so the login page's console shows no 401: the profile is read only when there is a staff session.
    const { role } = await call('guest/session/whoami');
    if (role === 'admin') await refreshStaff();
    else staff.set(null);
  } catch (error) {
    if (error instanceof ApiError && error.code === 403) pageError.set(error);
    staff.set(null);
  }
}

void start();
