// Parameter schemas as the gateway reads them, for the OpenAPI document: a boolean parameter also takes 0 and 1
// (validate.ts coerces them, and FOSSBilling clients send `valid=1`), so a generated client may send what the server
// accepts. Only parameters: results stay plain booleans.
type Json = Record<string, unknown>;

const FLAG_NUMBERS = { type: 'integer', enum: [0, 1] };

/** A copy of a converted parameter schema with every `{type: "boolean"}` widened to `boolean | 0 | 1`. */
export function asReadByGateway(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(asReadByGateway);
  if (node === null || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) out[key] = key === 'const' || key === 'default' || key === 'examples' ? value : asReadByGateway(value);
  if (out.type !== 'boolean') return out;
  // Annotations (description, default) stay on the outer schema; the type moves into the alternatives.
  const { type, ...annotations } = out;
  return { ...annotations, anyOf: [{ type }, FLAG_NUMBERS] };
}
