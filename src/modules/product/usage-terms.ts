// A product's usage terms in words (src/lib/usage-terms.ts), from what the catalogue shows of its config: the cart
// shows them on each line and a new order's invoice line carries them.
import { usageTermsText } from '../../lib/usage-terms.ts';
import type { ProductRow, ProductService } from './service.ts';

/** `termsOf(product)`: "1,000 calls included per billing period; then …", or null for a plan that meters nothing. */
export function usageTermsOf(products: Pick<ProductService, 'typeOf' | 'configOf'>, currency: string): (product: ProductRow) => string | null {
  return (product) => usageTermsText(products.typeOf(product).publicConfig(products.configOf(product)), currency);
}
