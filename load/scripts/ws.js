// WebSocket (contract/ws-protocol.md) and socket.io (contract/socketio-protocol.md,
// plan.framing: framing.js) with k6/websockets: each VU opens one connection
// and keeps it for its whole iteration.
//
//   closed model (plan.rate absent): send, wait for the reply (and
//     plan.think_ms), send the next, until plan.calls replies or plan.duration_s seconds;
//   open model (plan.rate: requests/s for all VUs): each connection sends on
//     a fixed schedule without waiting for replies (request_id matches
//     them), and latency counts from the scheduled send time, so a slow
//     reply never delays the next request (no coordinated omission).
//
// lab_connect (Trend, ms): the opening handshake, from new WebSocket to open
// (socket.io: to the namespace's connect packet, as socket.io-client's 'connect').
// Push messages (broadcasts of other clients) are skipped.
import { WebSocket } from 'k6/websockets';
import { Trend } from 'k6/metrics';
import { failed, latency, now, ops, plan } from './common.js';
import { framing } from './framing.js';

export { options } from './common.js';

const connect = new Trend('lab_connect', true);
const template = plan.request.message;  // {op, params}; request_id added per call
const frames = framing(plan.framing);

export default function () {
  const begin = now();
  const deadline = begin + 1000 * (plan.duration_s || 1e9);
  const limit = plan.calls || Infinity;
  const pending = new Map();   // request_id -> start (ms, the clock's origin)
  let next = 1;
  let answered = 0;
  let timer = null;
  const ws = new WebSocket(frames.url(plan.target));
  ws.binaryType = 'arraybuffer';

  function send(start) {
    const id = next++;
    pending.set(id, start);
    ws.send(frames.encode(id, template.op, template.params));
  }
  function finish() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    for (const [, start] of pending) {  // asked, never answered before the end
      latency.add(now() - start, { failed: 'true' });
      failed('unanswered');
    }
    pending.clear();
    ws.close();
  }

  function ready() {
    connect.add(now() - begin);
    if (plan.rate) {
      // This connection's share of the rate, on a fixed schedule from now.
      const period = 1000 * plan.vus / plan.rate;
      const origin = now();
      let k = 0;
      timer = setInterval(() => {
        const t = now();
        // Catch up on every slot that came due (a late timer is the
        // generator's lateness: counted from the scheduled time).
        while (origin + k * period <= t) {
          if (origin + k * period >= deadline) { finish(); return; }
          send(origin + k * period);
          k++;
        }
      }, Math.max(1, Math.floor(period / 2)));
    } else {
      send(now());
    }
  }
  ws.onopen = () => { if (frames.readyAtOpen) ready(); };
  ws.onmessage = (event) => {
    const t = now();
    let decoded;
    try { decoded = frames.decode(event.data, ws); } catch (e) { failed('malformed_reply'); return; }
    if (decoded === null || decoded.push) return;
    if (decoded.ready) { ready(); return; }
    if (decoded.closed) { failed('closed_by_server'); finish(); return; }
    const reply = decoded.reply;
    const start = pending.get(decoded.id);
    if (start === undefined) { failed('unknown_request_id'); return; }
    pending.delete(decoded.id);
    if (reply.error) {
      latency.add(t - start, { failed: 'true' });
      failed(reply.error.code || 'error');
    } else {
      latency.add(t - start);
      ops.add(1);
    }
    answered++;
    if (!plan.rate) {
      if (answered >= limit || t >= deadline) { finish(); } else if (plan.think_ms) {
        setTimeout(() => send(now()), plan.think_ms);  // a client that pauses between requests
      } else { send(now()); }
    }
  };
  ws.onerror = (e) => {
    failed(`ws_error`);
  };
  ws.onclose = () => {
    if (timer !== null) { clearInterval(timer); timer = null; }
  };
}
