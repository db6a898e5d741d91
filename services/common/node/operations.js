// The operations of the message protocols (contract/ws-protocol.md): an op
// name and named parameters, checked as services/ws/python_simple_websocket
// checks them, run against the store. Shared by ws/node_ws and socketio/node_socketio.
import { DEFAULT_LIST_LIMIT, invalid } from './contract.js';

export function operations(store) {
  return {
    create: [['game'], (p) => store.create(p.game)],
    get: [['id'], (p) => store.get(p.id)],
    list: [['limit', 'offset'], (p) => store.list(
      Object.hasOwn(p, 'limit') ? p.limit : DEFAULT_LIST_LIMIT, Object.hasOwn(p, 'offset') ? p.offset : 0)],
    update: [['id', 'game'], (p) => store.update(p.id, p.game)],
    delete: [['id'], (p) => store.delete(p.id)],
    health: [[], () => store.health()],
  };
}
const OPTIONAL = new Set(['limit', 'offset']);

// A JSON object (a plain or null-prototype object), not an array, a Buffer or a JsonNumber.
const isObject = (v) => v !== null && typeof v === 'object'
  && [Object.prototype, null].includes(Object.getPrototypeOf(v));

/** Checks `op` and `params` (undefined: none) against `table`; resolves to the result. */
export async function perform(table, op, params = {}) {
  if (typeof op !== 'string' || !Object.hasOwn(table, op)) {
    throw invalid(`unknown op ${JSON.stringify(op) ?? String(op)}: expected one of ${Object.keys(table).sort().join(', ')}`);
  }
  if (!isObject(params)) throw invalid('params must be an object');
  const [names, run] = table[op];
  const unknown = Object.keys(params).filter((k) => !names.includes(k)).sort();
  if (unknown.length) throw invalid(`unknown parameter '${unknown[0]}' for ${op}`);
  const missing = names.filter((n) => !Object.hasOwn(params, n) && !OPTIONAL.has(n));
  if (missing.length) throw invalid(`missing parameter '${missing[0]}' for ${op}`);
  return run(params);
}

export { isObject };
