// The push feeds of contract/push.md, for every Node.js transport (SSE, ws,
// socket.io): the subscription checked against contract.json "push", the
// `synthetic` feed (paced, exact count) and the `changes` feed (the database's
// change stream). A transport gives `deliver(id, dataJson)`, which resolves
// once the connection has taken the message.
import { performance } from 'node:perf_hooks';
import { CONTRACT, ContractError, JsonNumber, invalid } from './contract.js';
import { publicGame } from './store.js';

export const PUSH = CONTRACT.push;
const SYNTHETIC = PUSH.synthetic_params;
// Fields 1..11 of the event, as compact JSON after the timestamp's comma.
const EVENT_TAIL = JSON.stringify(PUSH.synthetic_event.slice(1)).slice(1);
const CHANGE_TYPE = { insert: 'created', replace: 'updated', update: 'updated', delete: 'deleted' };

// An integer as Python's json reads one (not a bool, not 5.0), or, from a
// query string, ASCII digits.
function integer(name, value, fromQuery) {
  if (fromQuery) {
    if (typeof value === 'string' && /^[0-9]+$/.test(value)) return Number(value);
  } else if (typeof value === 'number' && Number.isInteger(value)) {
    return value + 0;
  } else if (value instanceof JsonNumber && value.integer) {
    return Number(value.source);
  }
  throw invalid(`${name} must be an integer, got ${JSON.stringify(value) ?? String(value)}`);
}

/** A subscription: {feed, batch, rate, count, after}; INVALID_ARGUMENT if malformed. */
export function subscription(feed, params, lastEventId, { fromQuery = false } = {}) {
  if (typeof feed !== 'string' || !PUSH.feeds.includes(feed)) {
    throw invalid(`unknown feed ${JSON.stringify(feed) ?? String(feed)}: expected one of ${PUSH.feeds.join(', ')}`);
  }
  const allowed = feed === 'synthetic' ? SYNTHETIC : {};
  const unknown = Object.keys(params).filter((k) => !Object.hasOwn(allowed, k)).sort();
  if (unknown.length) throw invalid(`unknown parameter '${unknown[0]}' for feed ${feed}`);
  const sub = { feed };
  for (const [name, range] of Object.entries(allowed)) {
    const value = Object.hasOwn(params, name) ? integer(name, params[name], fromQuery) : range.default;
    if (value < range.min || value > range.max) {
      throw invalid(`${name} ${value} out of range ${range.min}..${range.max}`);
    }
    sub[name] = value;
  }
  if (lastEventId !== undefined && lastEventId !== null) {
    if (typeof lastEventId !== 'string') throw invalid('last_event_id must be a string');
    if (feed === 'synthetic') {
      const after = /^[0-9]+$/.test(lastEventId) ? Number(lastEventId) : NaN;
      if (!(after >= 0) || (sub.count > 0 && after > sub.count)) {
        throw invalid(`last event id ${JSON.stringify(lastEventId)}: expected an integer 0..${sub.count || 'any'}`);
      }
      sub.after = after;
    } else {
      sub.after = lastEventId;
    }
  }
  return sub;
}

/**
 * The real-time clock's epoch on performance.now()'s scale, in ms: read at
 * the edges of Date.now()'s millisecond ticks (the best of 5), because
 * performance.timeOrigin alone was measured 2-17 ms off Date.now() on a
 * loaded machine (Node.js 20). Preemption between the two reads only makes
 * an estimate smaller, so the largest is kept.
 */
function realTimeOrigin() {
  let best = -Infinity;
  for (let i = 0; i < 5; i += 1) {
    const before = Date.now();
    let tick = Date.now();
    while (tick === before) tick = Date.now();
    best = Math.max(best, tick - performance.now());
  }
  return best;
}
const ORIGIN_MS = realTimeOrigin();

/** Nanoseconds since the Unix epoch from the real-time clock (push.md). */
export const nowNs = () => BigInt(Math.round((ORIGIN_MS + performance.now()) * 1e6));

function syntheticMessage(batch) {
  const event = `[${nowNs()},${EVENT_TAIL}`;
  return `[${new Array(batch).fill(event).join(',')}]`;
}

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

/**
 * Runs a subscription until it ends, `stopped()` turns true, or an error.
 * `open` is called once the subscription is open (for changes: the stream is);
 * resolves to {end: {sent}} | {error: ContractError} | {stopped: true}.
 * An error before `open` is thrown instead (the subscription is refused).
 * `deliver` gets each message as `synthetic(batch)` and `change({type, id, game})`
 * make it: by default its JSON (SSE, WebSocket); a transport with messages of
 * its own (gRPC) gives both (synthetic stamps the message when called).
 */
export async function run(store, sub, {
  open, deliver, stopped, synthetic = syntheticMessage, change = JSON.stringify,
}) {
  return sub.feed === 'synthetic' ? runSynthetic(sub, open, deliver, stopped, synthetic)
    : runChanges(store, sub, open, deliver, stopped, change);
}

async function runSynthetic({ batch, rate, count, after = 0 }, open, deliver, stopped, message) {
  await open();
  const start = performance.now();
  let sent = 0;
  for (let k = after + 1; count === 0 || k <= count; k += 1) {
    if (stopped()) return { stopped: true };
    const due = rate > 0 ? start + (sent * 1000) / rate : 0;
    // Behind or unpaced: still yield to the event loop (as the Python service
    // does), or a subscription whose writes never fill the socket's buffer
    // runs on in microtasks, and other streams and new connections wait.
    // (The first message goes at once: its send time is the schedule's start.)
    // Never before it is due: a timer counts whole milliseconds from the
    // loop's cached clock and can fire early, so look at the clock again.
    let waited = false;
    for (let wait = due - performance.now(); wait > 0; wait = due - performance.now()) {
      await (wait >= 1 ? sleep(wait) : new Promise(setImmediate));
      waited = true;
    }
    if (!waited && sent > 0) await new Promise(setImmediate);
    if (stopped()) return { stopped: true };
    await deliver(String(k), message(batch));
    sent += 1;
  }
  return { end: { sent } };
}

async function openChanges(store, token) {
  try {
    return await store.watch(token);
  } catch (err) {
    if (err instanceof ContractError) throw err;
    if (token !== undefined) {
      // A stream that opens without the token: the token was the problem.
      const retry = await store.watch().catch(() => null);
      if (retry) {
        await retry.stream.close().catch(() => {});
        throw invalid(`last event id is not a resume token of this database: ${err.message}`);
      }
    }
    throw new ContractError('UNAVAILABLE', `cannot open the change stream: ${err.message}`);
  }
}

function changeMessage(change) {
  const type = CHANGE_TYPE[change.operationType];
  if (!type) return null;
  const id = change.documentKey?._id;
  const doc = change.fullDocument;
  const game = type === 'deleted' || !doc ? null : publicGame(doc._id, doc);
  return { type, id, game };
}

async function runChanges(store, sub, open, deliver, stopped, encode) {
  const { stream, first } = await openChanges(store, sub.after);
  let sent = 0;
  const stopTimer = setInterval(() => { if (stopped()) stream.close().catch(() => {}); }, 200);
  try {
    await open();
    let next = first; // the first change (or null: none yet), then each stream.next()
    for (;;) {
      const change = await next.catch((err) => {
        if (stopped() || stream.closed) return null;
        throw err;
      });
      if (stopped() || (change === null && stream.closed)) return { stopped: true };
      if (change) {
        const data = changeMessage(change);
        if (data === null) {
          return { error: new ContractError('UNAVAILABLE', `the change stream ended: ${change.operationType}`) };
        }
        await deliver(change._id._data, encode(data));
        sent += 1;
      }
      next = stream.next();
    }
  } catch (err) {
    return { error: new ContractError('UNAVAILABLE', `the change stream failed: ${err.message}`) };
  } finally {
    clearInterval(stopTimer);
    await stream.close().catch(() => {});
  }
}
