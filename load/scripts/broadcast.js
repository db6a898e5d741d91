// Fernando & Engel's broadcast test over the WebSocket protocol or socket.io
// (plan.framing: framing.js): VU 1 is the sender, every other VU a receiver
// holding one connection. The server sends each broadcast to every other
// connection (contract/ws-protocol.md, "Echo and broadcast").
//
// The sender first sends probe broadcasts (every plan.probe_ms) until the
// server says it delivered one to all plan.receivers; then plan.broadcasts
// measured ones, one every plan.interval_ms, each {n, sent_ms, pad}. A
// receiver records receive time - sent_ms (lab_latency, tagged n) for each
// measured broadcast, and leaves after the last one or at plan.duration_s.
//
//   lab_connect    Trend, ms: from new WebSocket to ready (framing.js)
//   lab_delivered  Trend: the server's count for broadcast n (sender; tagged n)
//   lab_ops        Counter: measured broadcasts received
import { WebSocket } from 'k6/websockets';
import { Trend } from 'k6/metrics';
import { failed, latency, now, ops, plan } from './common.js';
import { framing } from './framing.js';

export { options } from './common.js';

const connect = new Trend('lab_connect', true);
const delivered = new Trend('lab_delivered');
const frames = framing(plan.framing);
const pad = 'x'.repeat(plan.pad || 0);

export default function () {
  const sender = __VU === 1;
  const begin = now();
  const deadline = begin + 1000 * plan.duration_s;
  const ws = new WebSocket(frames.url(plan.target));
  const asked = new Map();  // request id -> measured broadcast n (0: a probe)
  let next = 1;
  let received = 0;
  let sent = 0;   // measured broadcasts sent (sender)
  let done = false;
  let guard = null;

  function finish() {
    if (done) return;
    done = true;
    if (guard !== null) clearTimeout(guard);
    ws.close();
  }
  function broadcast(n) {
    const id = next++;
    asked.set(id, n);
    const payload = n ? { n, sent_ms: now(), pad } : { probe: true };
    ws.send(frames.encode(id, 'broadcast', { payload }));
  }
  function measured(n) {
    if (done) return;
    if (n > plan.broadcasts) { setTimeout(finish, plan.interval_ms); return; }
    broadcast(n);
    sent = n;
    setTimeout(() => measured(n + 1), plan.interval_ms);
  }
  function ready() {
    connect.add(now() - begin);
    if (sender) broadcast(0);
  }

  guard = setTimeout(() => {
    if (!sender && received < plan.broadcasts) failed('broadcasts_missed');
    if (sender && sent < plan.broadcasts) failed(sent ? 'sender_out_of_time' : 'receivers_not_connected_in_time');
    finish();
  }, Math.max(1, deadline - now()));
  ws.onopen = () => { if (frames.readyAtOpen) ready(); };
  ws.onmessage = (event) => {
    const t = now();
    let decoded;
    try { decoded = frames.decode(event.data, ws); } catch (e) { failed('malformed_message'); return; }
    if (decoded === null) return;
    if (decoded.ready) { ready(); return; }
    if (decoded.closed) { failed('closed_by_server'); finish(); return; }
    if (decoded.push) {
      const message = decoded.push;
      if (message.event !== 'broadcast' || !message.data || message.data.probe) return;
      latency.add(t - message.data.sent_ms, { n: String(message.data.n) });
      ops.add(1);
      received++;
      if (received >= plan.broadcasts) finish();
      return;
    }
    if (!sender) { failed('unexpected_reply'); return; }
    const n = asked.get(decoded.id);
    asked.delete(decoded.id);
    const reply = decoded.reply;
    if (n === undefined || reply.error) { failed(reply.error ? reply.error.code : 'unknown_request_id'); return; }
    const count = reply.result.delivered;
    if (n > 0) {
      delivered.add(count, { n: String(n) });
    } else if (count >= plan.receivers) {
      setTimeout(() => measured(1), plan.interval_ms);   // everyone is here: begin
    } else if (now() + plan.probe_ms < deadline) {
      setTimeout(() => broadcast(0), plan.probe_ms);     // not yet: ask again
    } else {
      failed('receivers_not_connected');
      finish();
    }
  };
  ws.onerror = () => { failed('ws_error'); };
}
