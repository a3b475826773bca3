// The product type registry: every kind of product Tollgate can sell. services.ts registers `custom` and any type a
// service module adds (`productTypes.register(apikeyType)`); products, orders and checkout look types up here.
import { errors } from '../../platform/errors.ts';
import type { ProductType } from './product-type.ts';

export class ProductTypeRegistry {
  private readonly types = new Map<string, ProductType>();

  register(type: ProductType): void {
    if (this.types.has(type.code)) throw new Error(`Product type "${type.code}" is already registered`);
    this.types.set(type.code, type);
  }

  has(code: string): boolean {
    return this.types.has(code);
  }

  get(code: string): ProductType | undefined {
    return this.types.get(code);
  }

  /** The type with this code; an unknown code is a bad `param` (422). */
  require(code: string, param = 'type'): ProductType {
    const type = this.types.get(code);
    if (type === undefined) throw errors.invalid(param, `must be one of: ${this.codes().join(', ')}`);
    return type;
  }

  codes(): string[] {
    return [...this.types.keys()];
  }
}
