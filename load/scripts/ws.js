// WebSocket (contract/ws-protocol.md) with k6/websockets: each VU opens one
// connection and keeps it for its whole iteration.
//
//   closed model (plan.rate absent): send (the first after a random delay
//     under plan.first_spread_ms, if set), wait for the reply (and
//     plan.think_ms), send the next, until plan.calls replies or
//     plan.duration_s seconds after the connection opened; then, with
//     plan.hold_s, it stays open (sending nothing) until hold_s after its VU
//     began (the VUs of a per-vu-iterations run begin together), so that all
//     are open at once if the server accepts them all within hold_s;
//   open model (plan.rate: requests/s for all VUs): each connection sends on
//     a fixed schedule without waiting for replies (request_id matches
//     them), and latency counts from the scheduled send time, so a slow
//     reply never delays the next request (no coordinated omission).
//
// socket.io (plan.protocol 'socketio', contract/socketio-protocol.md) over
// its WebSocket transport, Engine.IO framing by hand: the server's open packet
// '0{...}', the client's namespace connect '40', the server's '40{...}'; a
// request is the event '42<ack id>["call",{op,params}]', its reply the ack
// '43<ack id>[{result}|{error}]'; the server's ping '2' is answered '3'. The
// ack id plays the request_id's part.
//
// lab_connect (Trend, ms): the opening handshake, from new WebSocket to open
// (socket.io: to the namespace's connect packet).
import { WebSocket } from 'k6/websockets';
import { Trend } from 'k6/metrics';
import { failed, latency, now, ops, plan } from './common.js';

export { options } from './common.js';

const connect = new Trend('lab_connect', true);
const template = plan.request.message;  // {op, params}; request_id added per call

// A reply read as http.js reads a body, not decoded: its request_id and, for
// an error, the contract's code. The game it carries is checked by the
// conformance suite; here the generator's CPU is what limits the run, and
// JSON.parse of every reply's game cost k6 about a fifth of its CPU against
// the Go services. A quote inside a JSON string is escaped, so '"error"'
// and '"request_id"' can only be keys.
function errorOf(data) {
  if (data.indexOf('"error"') === -1) return null;
  const m = /"code"\s*:\s*"([A-Z_]+)"/.exec(data);
  return m ? m[1] : 'error';
}
function read(data) {
  const m = /"request_id"\s*:\s*(\d+)/.exec(data);
  return { request_id: m ? Number(m[1]) : undefined, error: errorOf(data) };
}

export default function () {
  const begin = now();
  let deadline = Infinity;   // plan.duration_s after this connection opened
  const limit = plan.calls || Infinity;
  const pending = new Map();   // request_id -> start (ms, the clock's origin)
  let next = 1;
  let answered = 0;
  let timer = null;
  const sio = plan.protocol === 'socketio';
  const ws = new WebSocket(plan.request.url || plan.target);
  ws.binaryType = 'arraybuffer';

  function send(start) {
    const id = next++;
    pending.set(id, start);
    if (sio) {
      ws.send(`42${id}` + JSON.stringify(['call', { op: template.op, params: template.params }]));
    } else {
      ws.send(JSON.stringify({ request_id: id, op: template.op, params: template.params }));
    }
  }
  let finished = false;
  function finish() {
    if (finished) return;
    finished = true;
    if (timer !== null) { clearTimeout(timer); timer = null; }
    for (const [, start] of pending) {  // asked, never answered before the end
      latency.add(now() - start, { failed: 'true' });
      failed('unanswered');
    }
    pending.clear();
    ws.close();
  }
  function hold() {  // closed model, done: open until plan.hold_s after this VU began, if set
    const rest = plan.hold_s ? begin + 1000 * plan.hold_s - now() : 0;
    if (rest > 0) { timer = setTimeout(finish, rest); } else { finish(); }
  }
  let draining = false;
  function drain() {  // open model, schedule over: the replies still due, at most 10 s
    draining = true;
    if (pending.size === 0) { finish(); return; }
    timer = setTimeout(finish, 10000);
  }

  function ready() {
    connect.add(now() - begin);
    deadline = now() + 1000 * (plan.duration_s || 1e9);
    if (plan.rate) {
      // This connection's share of the rate on a fixed schedule, its phase
      // the VU's place among all (VU k of n starts k/n of a period in), so
      // that the connections' requests arrive evenly spread, as k6's
      // constant-arrival-rate spreads HTTP requests, not in bursts of one
      // per connection. Each send is timed to its slot (setTimeout to the
      // next one); a late timer is the generator's lateness, counted from
      // the scheduled time.
      const period = 1000 * plan.vus / plan.rate;
      const origin = now() + period * (((__VU - 1) % plan.vus) / plan.vus);
      let k = 0;
      const tick = () => {
        timer = null;
        const t = now();
        while (origin + k * period <= t) {
          if (origin + k * period >= deadline) { drain(); return; }
          send(origin + k * period);
          k++;
        }
        timer = setTimeout(tick, Math.max(0, origin + k * period - now()));
      };
      tick();
    } else if (plan.first_spread_ms) {
      // closed model, clients arriving over time: the first request at a random
      // moment within first_spread_ms of the connection opening, not all at once
      timer = setTimeout(() => { timer = null; send(now()); }, Math.random() * plan.first_spread_ms);
    } else {
      send(now());
    }
  }
  // socket.io: the reply as the WebSocket protocol has it ({request_id,
  // result|error}); null for Engine.IO's own packets (answered here).
  function unframe(data) {
    if (data === '2') { ws.send('3'); return null; }            // ping → pong
    if (data[0] === '0') { ws.send('40'); return null; }         // Engine.IO open → connect to '/'
    if (data.startsWith('40')) { ready(); return null; }         // connected to the namespace
    const m = /^43(\d+)\[/.exec(data);
    if (!m) return { request_id: -1 };
    return { request_id: Number(m[1]), error: errorOf(data) };
  }

  ws.onopen = () => {
    if (!sio) ready();
  };
  ws.onmessage = (event) => {
    const t = now();
    const reply = sio ? unframe(event.data) : read(event.data);
    if (reply === null) return;
    if (reply.request_id === undefined) { failed('malformed_reply'); return; }
    const start = pending.get(reply.request_id);
    if (start === undefined) { failed('unknown_request_id'); return; }
    pending.delete(reply.request_id);
    if (reply.error) {
      latency.add(t - start, { failed: 'true' });
      failed(reply.error);
    } else {
      latency.add(t - start);
      ops.add(1);
    }
    answered++;
    if (draining && pending.size === 0) { finish(); return; }
    if (!plan.rate) {
      if (answered >= limit || t >= deadline) { hold(); } else if (plan.think_ms) {
        setTimeout(() => send(now()), plan.think_ms);  // a client that pauses between requests
      } else { send(now()); }
    }
  };
  ws.onerror = (e) => {
    // the kind names what k6 saw (addresses and ports removed: one kind per cause)
    const why = e && e.error ? String(e.error).replace(/[0-9.]+:\d+/g, 'ADDR').slice(0, 80) : '';
    failed(why ? `ws_error: ${why}` : 'ws_error');
  };
  ws.onclose = () => {
    if (timer !== null) { clearTimeout(timer); timer = null; }
  };
}
