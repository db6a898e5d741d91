// The operations of the message protocols (contract/ws-protocol.md): an op
// name and named parameters, checked as services/ws/python_simple_websocket
// checks them, run against the store. Shared by ws/node_ws and socketio/node_socketio.
import { DEFAULT_LIST_LIMIT, asContractError, invalid } from './contract.js';
import { dumps, dumpsExact } from './json.js';
import { run, subscription } from './push.js';

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
  const [names, run, optional = OPTIONAL] = table[op];
  const unknown = Object.keys(params).filter((k) => !names.includes(k)).sort();
  if (unknown.length) throw invalid(`unknown parameter '${unknown[0]}' for ${op}`);
  const missing = names.filter((n) => !Object.hasOwn(params, n) && !optional.has(n));
  if (missing.length) throw invalid(`missing parameter '${missing[0]}' for ${op}`);
  return run(params);
}

export { isObject };

/** A result already encoded as JSON text (an echoed payload, written exactly as it came). */
export class Raw {
  constructor(text) { this.text = text; }
}

/** The result of a subscribe: `release()` is called once the reply has been sent,
 * so that the subscription's first message follows its reply. */
export class Opened {
  constructor(result, release) { this.result = result; this.release = release; }
}

/**
 * echo, broadcast, subscribe and unsubscribe (ws-protocol.md) for one connection.
 * `push(text)` sends a push message to this connection and resolves once it is
 * taken; `others()` are the other connections' `push` functions; `pushMessage(event,
 * fields)` encodes a push message in the transport's terms.
 */
export function pushOperations(store, { push, others, closed, encode }) {
  const subscriptions = new Map(); // feed -> {stopped}
  const stopAll = () => { for (const s of subscriptions.values()) s.stopped = true; subscriptions.clear(); };
  const table = {
    echo: [['payload'], (p) => new Raw(dumpsExact(p.payload))],
    broadcast: [['payload'], async (p) => {
      const text = encode({ event: 'broadcast' }, dumpsExact(p.payload));
      let delivered = 0;
      for (const other of others()) {
        if (other(text)) delivered += 1;
      }
      return { delivered };
    }],
    subscribe: [['feed', 'batch', 'rate', 'count', 'last_event_id'], (p) => {
      const { feed, last_event_id: lastEventId, ...params } = p;
      const sub = subscription(feed, params, lastEventId);
      if (subscriptions.has(feed)) throw invalid(`already subscribed to ${feed}`);
      const state = { stopped: false };
      subscriptions.set(feed, state);
      const stopped = () => state.stopped || closed();
      return new Promise((resolve, reject) => {
        let opened = false;
        let release;
        const replied = new Promise((r) => { release = r; });
        const finish = (event, data) => {
          if (subscriptions.get(feed) === state) subscriptions.delete(feed);
          if (!stopped()) push(encode({ event, feed }, dumps(data)));
        };
        run(store, sub, {
          open: async () => { opened = true; resolve(new Opened({ feed }, release)); await replied; },
          deliver: (id, data) => (stopped() ? Promise.resolve() : push(encode({ event: feed, id }, data))),
          stopped,
        }).then((outcome) => {
          if (outcome.end) finish('end', outcome.end);
          else if (outcome.error) finish('error', { code: outcome.error.code, message: outcome.error.message });
          else if (subscriptions.get(feed) === state) subscriptions.delete(feed);
        }, (err) => {
          if (subscriptions.get(feed) === state) subscriptions.delete(feed);
          if (!opened) { reject(err); return; }
          const e = asContractError(err);
          finish('error', { code: e.code, message: e.message });
        });
      });
    }, new Set(['batch', 'rate', 'count', 'last_event_id'])],
    unsubscribe: [['feed'], (p) => {
      subscription(p.feed, {}, undefined); // a known feed
      const state = subscriptions.get(p.feed);
      if (state) { state.stopped = true; subscriptions.delete(p.feed); }
      return null;
    }],
  };
  return { table, stopAll };
}
