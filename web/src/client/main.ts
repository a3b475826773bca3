// The client area (served at /): plans, cart and checkout, invoices, orders, API keys, profile.
import { html, render } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import '../style.css';
import { ApiError, call, describeError, onAuthLost } from '../lib/api.ts';
import { Link, match, navigate, useLocation } from '../lib/router.ts';
import { createStore, useStore } from '../lib/store.ts';
import { Loading } from '../lib/ui.ts';
import { account, cartSummary, loginReason, refreshAccount, refreshCart } from './state.ts';
import { ConfirmEmailPage, ForgotPage, LoginPage, ResetPage, SignupPage } from './auth.ts';
import { useHashRoute } from '../lib/security.ts';
import { CartPage, PlansPage } from './shop.ts';
import { ChangePlanPage, GuestInvoicePage, InvoicePage, InvoicesPage, OrdersPage } from './billing.ts';
import { KeysPage } from './keys.ts';
import { ProfilePage } from './profile.ts';
import { MessagePage, MessagesPage } from './messages.ts';
import { BrandLink, Footer, loadBrand } from './brand.ts';

/** An error about the whole page (e.g. the session lost its CSRF token), shown above every page. */
const pageError = createStore<unknown>(null);

onAuthLost(() => {
  if (account.get()) {
    loginReason.set('Your session has ended. Please log in again.');
    account.set(null);
  }
});

function Header() {
  const user = useStore(account);
  const cart = useStore(cartSummary);
  const { path } = useLocation();
  const [busy, setBusy] = useState(false);
  const item = (href: string, label: string) =>
    html`<li><${Link} href=${href} current=${href === '/' ? path === '/' : path.startsWith(href)}>${label}<//></li>`;
  const logout = async (): Promise<void> => {
    setBusy(true);
    try {
      await call('client/profile/logout');
    } catch {
      // The session may already be gone: the user is logged out either way.
    } finally {
      setBusy(false);
    }
    account.set(null);
    cartSummary.set({ count: 0, currency: cartSummary.get().currency });
    navigate('/');
  };
  return html`<header class="top">
    <div class="inner">
      <${BrandLink} />
      <nav aria-label="Main">
        <ul>
          ${item('/', 'Plans')}
          ${item('/cart', cart.count > 0 ? `Cart (${cart.count})` : 'Cart')}
          ${user
            ? html`${item('/keys', 'API keys')}${item('/orders', 'Orders')}${item('/invoices', 'Invoices')}${item('/messages', 'Messages')}${item('/profile', 'Profile')}
                <li><button type="button" onClick=${logout} disabled=${busy} aria-busy=${busy ? 'true' : 'false'}>${busy ? 'Working…' : 'Log out'}</button></li>`
            : html`${item('/login', 'Log in')}${item('/signup', 'Sign up')}`}
        </ul>
      </nav>
      ${user ? html`<span class="who">Signed in as ${user.email}</span>` : null}
    </div>
  </header>`;
}

/** Pages that need a logged-in client show the login form in their place until there is one. */
function Protected({ children, what }: { children: unknown; what: string }) {
  const user = useStore(account);
  if (user === undefined) return html`<${Loading} />`;
  if (user === null) return html`<${LoginPage} intro=${`Log in to see ${what}.`} stay=${true} />`;
  return children;
}

function Routes() {
  const { path } = useLocation();
  // Links from mails: the token rides in the fragment (see useHashRoute).
  const fromMail = useHashRoute();
  if (fromMail?.name === 'reset') return html`<${ResetPage} hash=${fromMail.token} />`;
  if (fromMail?.name === 'confirm-email') return html`<${ConfirmEmailPage} hash=${fromMail.token} />`;
  if (path === '/') return html`<${PlansPage} />`;
  if (path === '/forgot') return html`<${ForgotPage} />`;
  if (path === '/cart') return html`<${CartPage} />`;
  if (path === '/login') return html`<${LoginPage} />`;
  if (path === '/signup') return html`<${SignupPage} />`;
  if (path === '/keys') return html`<${Protected} what="your API keys"><${KeysPage} /><//>`;
  if (path === '/orders') return html`<${Protected} what="your orders"><${OrdersPage} /><//>`;
  if (path === '/invoices') return html`<${Protected} what="your invoices"><${InvoicesPage} /><//>`;
  const invoice = match('/invoices/:id', path);
  if (invoice !== null) return html`<${Protected} what="this invoice"><${InvoicePage} id=${Number(invoice.id)} /><//>`;
  const planChange = match('/orders/:id/plan', path);
  if (planChange !== null && /^\d+$/.test(planChange.id ?? '')) return html`<${Protected} what="your order"><${ChangePlanPage} id=${Number(planChange.id)} /><//>`;
  const guestInvoice = match('/invoice/:hash', path);
  if (guestInvoice !== null) return html`<${GuestInvoicePage} hash=${guestInvoice.hash} />`;
  if (path === '/profile') return html`<${Protected} what="your profile"><${ProfilePage} /><//>`;
  if (path === '/messages') return html`<${Protected} what="your messages"><${MessagesPage} /><//>`;
  const message = match('/messages/:id', path);
  if (message !== null && /^\d+$/.test(message.id ?? '')) return html`<${Protected} what="this message"><${MessagePage} id=${Number(message.id)} /><//>`;
  return html`<h1>Page not found</h1><p>There is no page at this address. <${Link} href="/">See the plans<//>.</p>`;
}

function App() {
  const error = useStore(pageError);
  useEffect(() => {
    const unsubscribe = account.subscribe(() => {
      if (account.get()) pageError.set(null);
    });
    return () => {
      unsubscribe();
    };
  }, []);
  return html`
    <${Header} />
    <main id="main" tabindex="-1">
      ${error !== null ? html`<p class="error" role="alert">${describeError(error)}</p>` : null}
      <${Routes} />
    </main>
    <${Footer} />
  `;
}

async function start(): Promise<void> {
  const root = document.getElementById('app')!;
  render(html`<${App} />`, root);
  void loadBrand();
  try {
    // Asked first so a visitor's console shows no 401: the profile is read only when there is a client session.
    const { role } = await call('guest/session/whoami');
    if (role === 'client') await refreshAccount();
    else account.set(null);
  } catch (error) {
    // No session (or a staff session): a guest. A session that lost its CSRF token is shown, not hidden.
    if (error instanceof ApiError && error.code === 403) pageError.set(error);
    account.set(null);
  }
  try {
    await refreshCart();
  } catch {
    // The cart badge is optional; the cart page shows its own errors.
  }
}

void start();
