// WebSocket: ws 8.x on Node's http server, JSON messages (contract/ws-protocol.md).
// Every request gets exactly one reply carrying its request_id; a bad request
// gets an error reply and the connection stays open; a frame over
// max_frame_bytes closes it (1009, from ws's own maxPayload).
import { WebSocketServer } from 'ws';
import { COMPRESSION } from '../../common/node/compression.js';
import {
  ContractError, JsonNumber, MAX_FRAME_BYTES, asContractError, checkSize, invalid, sized,
} from '../../common/node/contract.js';
import { healthHandler } from '../../common/node/health.js';
import { createHttpServer, noDelay, listen, onStop } from '../../common/node/env.js';
import { dumps, parse } from '../../common/node/json.js';
import {
  Opened, Raw, isObject, operations, perform, pushOperations,
} from '../../common/node/operations.js';
import { Store } from '../../common/node/store.js';

const store = new Store();
const OPERATIONS = operations(store);
const MEMBERS = new Set(['request_id', 'op', 'params']);

// request_id as Python reads it: an int (not a bool, not a float, exact
// however large) or a string; its JSON text for the reply.
function requestIdJson(value) {
  if (typeof value === 'string') return dumps(value);
  if (typeof value === 'number' && Number.isInteger(value)) return dumps(value + 0);
  if (value instanceof JsonNumber && value.integer) return value.source;
  return null;
}

// The reply, as text: {"request_id": ..., "result" | "error": ...}, and what
// to do once it is sent (a subscription's first message follows its reply).
async function handle(message, size, table) {
  let id = 'null';
  try {
    const request = parse(message);
    if (!isObject(request)) throw invalid('a request must be a JSON object');
    const idJson = requestIdJson(request.request_id);
    if (idJson === null) throw invalid('request_id must be an integer or a string');
    id = idJson;
    // Checked after parsing (frames are capped at MAX_FRAME_BYTES), so the
    // error reply can name the request it answers.
    checkSize(size);
    const unknown = Object.keys(request).filter((k) => !MEMBERS.has(k)).sort();
    if (unknown.length) throw invalid(`unknown request member '${unknown[0]}'`);
    const result = await perform(table, request.op, Object.hasOwn(request, 'params') ? request.params : {});
    if (result instanceof Opened) {
      return { text: `{"request_id":${id},"result":${dumps(result.result)}}`, after: result.release };
    }
    const json = result instanceof Raw ? result.text : dumps(result ?? null);
    return { text: sized(`{"request_id":${id},"result":${json}}`) };
  } catch (err) {
    if (!(err instanceof ContractError)) console.error(err); // a bug must not cost the client its connection
    const e = asContractError(err);
    return { text: `{"request_id":${id},"error":${dumps({ code: e.code, message: e.message })}}` };
  }
}

const server = noDelay(createHttpServer({ keepAliveTimeout: 75_000 }, healthHandler(store)));

// LAB_COMPRESSION=gzip (lab/axes.py, axis `compression`): permessage-deflate when
// the client's handshake offers it (ws's defaults: context takeover, messages of
// 1,024 bytes or more compressed); otherwise none offered.
const wss = new WebSocketServer({
  server, path: '/ws', maxPayload: MAX_FRAME_BYTES, perMessageDeflate: COMPRESSION === 'gzip',
});
// A push message (ws-protocol.md): {"event", "feed"?, "id"?, "data"}.
const encode = (fields, data) => `${dumps(fields).slice(0, -1)},"data":${data}}`;
const open = (ws) => ws.readyState === ws.OPEN;
// Sends; resolves once ws has written it (a paced or unpaced feed waits for the connection).
const sendTo = (ws) => (text) => new Promise((resolve) => {
  if (!open(ws)) { resolve(false); return; }
  ws.send(text, (err) => resolve(!err));
});

wss.on('connection', (ws) => {
  const push = pushOperations(store, {
    push: sendTo(ws),
    // broadcast: sent to every other open connection; counted if it could be sent
    others: () => [...wss.clients].filter((c) => c !== ws).map((c) => (text) => {
      if (!open(c)) return false;
      c.send(text);
      return true;
    }),
    closed: () => !open(ws),
    encode,
  });
  const table = { ...OPERATIONS, ...push.table };
  ws.on('message', async (data, isBinary) => {
    const message = Buffer.isBuffer(data) ? data : Buffer.concat([].concat(data));
    const reply = await handle(isBinary ? message : message.toString('utf8'), message.length, table);
    if (open(ws)) ws.send(reply.text);
    reply.after?.();
  });
  ws.on('close', push.stopAll);
  ws.on('error', () => {}); // a protocol error closes the connection (ws sends the close code)
});

listen(server);
onStop(() => new Promise((resolve) => {
  for (const client of wss.clients) client.terminate();
  wss.close();
  server.close(() => store.close().finally(resolve));
  server.closeIdleConnections();
}));
