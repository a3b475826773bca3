// The admin panel (served at /admin): dashboard, clients, products, orders, invoices, keys, staff and groups, profile.
// It runs in the shared shell (lib/shell.ts), which every page of it needs a staff login for.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import '../style.css';
import { call } from '../lib/api.ts';
import { LoginForm } from '../lib/login-form.ts';
import { Link } from '../lib/router.ts';
import { fixedPage, recordPage, startArea, type Area, type Route } from '../lib/shell.ts';
import { useLoad } from '../lib/ui.ts';
import { ForgotPasswordForm, leaveHashRoute, ResetPasswordForm } from '../lib/security.ts';
import { loginReason, refreshStaff, staff } from './common.ts';
import { DashboardPage } from './dashboard.ts';
import { FigureListPage } from './figure-list.ts';
import { ClientPage, ClientsPage } from './clients.ts';
import { ProductPage, ProductsPage } from './products.ts';
import { InvoicePage, InvoicesPage, OrderPage, OrdersPage } from './orders.ts';
import { KeyPage, KeysPage } from './keys.ts';
import { CouponsPage, SettingsPage, TaxesPage } from './billing.ts';
import { PacksPage } from './packs.ts';
import { AdminProfilePage, GroupsPage, StaffMemberPage, StaffPage } from './staff.ts';
import { StaffConfirmEmailPage } from './own-email.ts';
import { TransactionsPage } from './transactions.ts';
import { CurrenciesPage } from './currencies.ts';
import { EmailPage, EmailsPage, TemplatePage, TemplatesPage } from './email.ts';
import { DevelopersPage } from './developers.ts';
import { MailBanner } from './mail-banner.ts';
import { ActivityPage } from './activity.ts';

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
  ['/admin/packs', 'Packs'],
  ['/admin/taxes', 'Taxes'],
  ['/admin/currencies', 'Currencies'],
  ['/admin/settings', 'Settings'],
  ['/admin/developers', 'Developers'],
  ['/admin/staff', 'Staff'],
  ['/admin/activity', 'Activity'],
  ['/admin/profile', 'Profile'],
] as const;

/** The operator's name, not ours (issue 21): "Tollgate" is only in the footer. */
function Brand() {
  const company = useLoad(() => call('guest/system/company'), []);
  const title = company.data?.name ? `${company.data.name} admin` : 'Admin';
  if (company.data !== undefined) document.title = title;
  return html`<${Link} href="/admin" class="brand">${title}<//>`;
}

function Footer() {
  return html`<footer class="bottom">Tollgate admin · <a href="/">Client area</a> · <a href="/api/docs">API reference</a></footer>`;
}

function LoginPage() {
  const [forgot, setForgot] = useState(false);
  return html`<h1>Staff log in</h1>
    <${LoginForm} action="guest/staff/login" reason=${loginReason} onLoggedIn=${refreshStaff} />
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

const ROUTES: readonly Route[] = [
  fixedPage('/admin', DashboardPage),
  { path: '/admin/dashboard/:figure', page: (params) => html`<${FigureListPage} figure=${params.figure ?? ''} />` },
  fixedPage('/admin/clients', ClientsPage),
  fixedPage('/admin/products', ProductsPage),
  fixedPage('/admin/orders', OrdersPage),
  fixedPage('/admin/invoices', InvoicesPage),
  fixedPage('/admin/transactions', TransactionsPage),
  fixedPage('/admin/keys', KeysPage),
  fixedPage('/admin/coupons', CouponsPage),
  fixedPage('/admin/packs', PacksPage),
  fixedPage('/admin/taxes', TaxesPage),
  fixedPage('/admin/currencies', CurrenciesPage),
  fixedPage('/admin/settings', SettingsPage),
  fixedPage('/admin/staff', StaffPage),
  fixedPage('/admin/groups', GroupsPage),
  fixedPage('/admin/profile', AdminProfilePage),
  fixedPage('/admin/email', EmailsPage),
  fixedPage('/admin/email/templates', TemplatesPage),
  fixedPage('/admin/developers', DevelopersPage),
  fixedPage('/admin/activity', ActivityPage),
  {
    path: '/admin/email/templates/:code',
    page: ({ code = '' }) => (/^[a-z_]+$/.test(code) ? html`<${TemplatePage} code=${code} />` : null),
  },
  recordPage('/admin/clients/:id', ClientPage),
  recordPage('/admin/products/:id', ProductPage),
  recordPage('/admin/orders/:id', OrderPage),
  recordPage('/admin/invoices/:id', InvoicePage),
  recordPage('/admin/keys/:id', KeyPage),
  recordPage('/admin/staff/:id', StaffMemberPage),
  recordPage('/admin/email/:id', EmailPage),
];

const admin: Area = {
  role: 'admin',
  home: '/admin',
  navigationLabel: 'Admin',
  account: staff,
  loginReason,
  refreshAccount: refreshStaff,
  logoutAction: 'admin/profile/logout',
  // The panel's navigation is for staff only: logged out, the header shows the brand alone.
  useNavigation: (me) => (me ? NAV : null),
  loginFirst: true,
  collapsibleNavigation: true,
  routes: ROUTES,
  mailPages: {
    reset: (token) => html`<${ResetPage} hash=${token} />`,
    'confirm-email': (token) => html`<${StaffConfirmEmailPage} hash=${token} />`,
  },
  notFound: () => html`<h1>Page not found</h1><p><${Link} href="/admin">Back to the dashboard<//>.</p>`,
  Brand,
  Footer,
  LoginPage,
  Banner: MailBanner,
};

void startArea(admin);
