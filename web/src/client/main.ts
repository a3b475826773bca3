// The client area (served at /): plans, cart and checkout, invoices, orders, API keys, profile. It runs in the shared
// shell (lib/shell.ts); its plans, cart and guest invoices are open to visitors, the rest needs a login.
import { html } from 'htm/preact';
import '../style.css';
import { Link } from '../lib/router.ts';
import { fixedPage, recordPage, startArea, type Area, type Route } from '../lib/shell.ts';
import { useStore } from '../lib/store.ts';
import { account, cartSummary, loginReason, refreshAccount, refreshCart } from './state.ts';
import { ClientConfirmEmailPage, ForgotPage, LoginPage, ResetPage, SignupPage } from './auth.ts';
import { CartPage, PlansPage } from './shop.ts';
import { ChangePlanPage, GuestInvoicePage, InvoicePage, InvoicesPage, OrdersPage } from './billing.ts';
import { KeysPage } from './keys.ts';
import { WalletPage } from './wallet.ts';
import { ProfilePage } from './profile.ts';
import { MessagePage, MessagesPage } from './messages.ts';
import { BrandLink, Footer, loadBrand } from './brand.ts';
import { startPortal } from './portal.ts';
import { TrialBanner } from './trial-banner.ts';

function useNavigation(user: { email: string } | null | undefined): ReadonlyArray<readonly [string, string]> {
  const cart = useStore(cartSummary);
  const shop = [
    ['/', 'Plans'],
    ['/cart', cart.count > 0 ? `Cart (${cart.count})` : 'Cart'],
  ] as const;
  return user
    ? [...shop, ['/keys', 'API keys'], ['/orders', 'Orders'], ['/invoices', 'Invoices'], ['/wallet', 'Wallet'], ['/messages', 'Messages'], ['/profile', 'Profile']]
    : [...shop, ['/login', 'Log in'], ['/signup', 'Sign up']];
}

const ROUTES: readonly Route[] = [
  fixedPage('/', PlansPage),
  fixedPage('/forgot', ForgotPage),
  fixedPage('/cart', CartPage),
  fixedPage('/login', LoginPage),
  fixedPage('/signup', SignupPage),
  fixedPage('/keys', KeysPage, 'your API keys'),
  fixedPage('/orders', OrdersPage, 'your orders'),
  fixedPage('/invoices', InvoicesPage, 'your invoices'),
  fixedPage('/wallet', WalletPage, 'your wallet'),
  // Any segment: the invoice page answers for an id that is not one.
  { path: '/invoices/:id', page: ({ id }) => html`<${InvoicePage} id=${Number(id)} />`, login: 'this invoice' },
  recordPage('/orders/:id/plan', ChangePlanPage, 'your order'),
  { path: '/invoice/:hash', page: ({ hash }) => html`<${GuestInvoicePage} hash=${hash} />` },
  fixedPage('/profile', ProfilePage, 'your profile'),
  fixedPage('/messages', MessagesPage, 'your messages'),
  recordPage('/messages/:id', MessagePage, 'this message'),
];

const client: Area = {
  role: 'client',
  home: '/',
  navigationLabel: 'Main',
  account,
  loginReason,
  refreshAccount,
  logoutAction: 'client/profile/logout',
  useNavigation,
  loginFirst: false,
  routes: ROUTES,
  mailPages: {
    reset: (token) => html`<${ResetPage} hash=${token} />`,
    'confirm-email': (token) => html`<${ClientConfirmEmailPage} hash=${token} />`,
  },
  notFound: () => html`<h1>Page not found</h1><p>There is no page at this address. <${Link} href="/">See the plans<//>.</p>`,
  Brand: BrandLink,
  Footer,
  Banner: TrialBanner,
  LoginPage,
  beforeSession: () => void loadBrand(),
  afterSession: async () => {
    try {
      await refreshCart();
    } catch {
      // The cart badge is optional; the cart page shows its own errors.
    }
  },
  afterLogout: () => cartSummary.set({ count: 0, currency: cartSummary.get().currency }),
};

// /portal and below: the customer portal to embed (issue 25), the client area in portal mode.
if (location.pathname === '/portal' || location.pathname.startsWith('/portal/')) void startPortal();
else void startArea(client);
