// socket.io 4.8 on Node's http server, the WebSocket transport only
// (contract/socketio-protocol.md): the client emits "call" with one argument,
// {"op", "params"} as in contract/ws-protocol.md, and an ack; the ack carries
// {"result": ...} or {"error": {"code", "message"}}. socket.io's own ack ids
// take the place of request_id. An error never closes the connection; a
// packet over max_frame_bytes does (socket.io's maxHttpBufferSize).
import { COMPRESSION } from '../../common/node/compression.js';
import { Server } from 'socket.io';
import { Decoder, Encoder } from 'socket.io-parser';
import {
  ContractError, MAX_FRAME_BYTES, asContractError, checkSize, invalid, sized,
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
const EVENT = 'call';
const MEMBERS = new Set(['op', 'params']);

// socket.io's parser with the lab's JSON semantics (common/node/json.js): a
// packet's JSON is read as Python's json reads it (5.0 stays a float, big
// integers stay exact), and an argument already encoded (RawJson: an echoed
// payload, a push message) is written as it is.
class RawJson {
  constructor(text) { this.text = text; }
}
class ExactDecoder extends Decoder {
  tryParse(text) {
    try {
      return parse(text);
    } catch {
      return false;
    }
  }
}
class ExactEncoder extends Encoder {
  encodeAsString(packet) {
    const { data } = packet;
    if (!Array.isArray(data) || !data.some((x) => x instanceof RawJson)) return super.encodeAsString(packet);
    const args = data.map((x) => (x instanceof RawJson ? x.text : JSON.stringify(x)));
    return `${super.encodeAsString({ ...packet, data: undefined })}[${args.join(',')}]`;
  }
}

// The size of each event as it came over the wire, in arrival order: an
// Engine.IO message whose text starts with 2 (EVENT), or 5 (BINARY_EVENT)
// plus its binary attachments. socket.io runs the event's listeners in the
// same order (a process.nextTick each), so each takes the oldest size.
function trackSizes(conn) {
  const sizes = [];
  let binary = null; // {size, left} while a BINARY_EVENT's attachments arrive
  conn.on('packet', (packet) => {
    if (packet.type !== 'message') return;
    const data = packet.data;
    if (typeof data !== 'string') {
      if (binary) {
        binary.size += data.byteLength ?? data.length;
        binary.left -= 1;
        if (binary.left <= 0) { sizes.push(binary.size); binary = null; }
      }
      return;
    }
    if (data[0] === '2') sizes.push(Buffer.byteLength(data));
    else if (data[0] === '5') {
      const attachments = Number.parseInt(data.slice(1), 10) || 0;
      binary = { size: Buffer.byteLength(data), left: attachments };
      if (attachments === 0) { sizes.push(binary.size); binary = null; }
    }
  });
  return sizes;
}

async function handle(event, args, size, table) {
  if (event !== EVENT) throw invalid(`unknown event ${JSON.stringify(event)}: expected "${EVENT}"`);
  if (args.length !== 1) throw invalid(`"${EVENT}" takes one argument, got ${args.length}`);
  checkSize(size);
  const [request] = args;
  if (!isObject(request)) throw invalid('a request must be a JSON object');
  const unknown = Object.keys(request).filter((k) => !MEMBERS.has(k)).sort();
  if (unknown.length) throw invalid(`unknown request member '${unknown[0]}'`);
  return perform(table, request.op, Object.hasOwn(request, 'params') ? request.params : {});
}

const server = noDelay(createHttpServer({ keepAliveTimeout: 75_000 }, healthHandler(store)));

const io = new Server(server, {
  transports: ['websocket'], maxHttpBufferSize: MAX_FRAME_BYTES, serveClient: false,
  parser: { Encoder: ExactEncoder, Decoder: ExactDecoder },
  // LAB_COMPRESSION=gzip (lab/axes.py, axis `compression`): permessage-deflate when
  // the client's handshake offers it (ws underneath, its defaults: messages of 1,024
  // bytes or more compressed). The lab's client cannot offer it (manifest.toml).
  perMessageDeflate: COMPRESSION === 'gzip', httpCompression: false,
});
// Push messages are the event "push" with the WebSocket protocol's push
// message as its one argument (contract/socketio-protocol.md).
const PUSH_EVENT = 'push';
const encode = (fields, data) => new RawJson(`${dumps(fields).slice(0, -1)},"data":${data}}`);
// Emits; resolves once Engine.IO's write buffer has drained, so a feed waits for the connection.
const emitTo = (socket) => (message) => new Promise((resolve) => {
  if (!socket.connected) { resolve(false); return; }
  socket.emit(PUSH_EVENT, message);
  const conn = socket.conn;
  if (!conn.writeBuffer?.length) { resolve(true); return; }
  const done = () => { conn.off('drain', done); conn.off('close', done); resolve(true); };
  conn.on('drain', done);
  conn.on('close', done);
});

io.on('connection', (socket) => {
  const sizes = trackSizes(socket.conn);
  const push = pushOperations(store, {
    push: emitTo(socket),
    others: () => [...io.of('/').sockets.values()].filter((s) => s !== socket).map((s) => (message) => {
      if (!s.connected) return false;
      s.emit(PUSH_EVENT, message);
      return true;
    }),
    closed: () => !socket.connected,
    encode,
  });
  const table = { ...OPERATIONS, ...push.table };
  socket.on('disconnect', push.stopAll);
  socket.onAny((event, ...args) => {
    const size = sizes.shift() ?? 0;
    const ack = typeof args.at(-1) === 'function' ? args.pop() : null;
    // Without an ack there is nowhere to answer: the event is run and its result dropped.
    // A page of games, the one answer that can exceed max_response_bytes, is
    // encoded here (once) and refused as RESOURCE_EXHAUSTED when over it.
    handle(event, args, size, table).then((r) => (Array.isArray(r) ? new Raw(sized(dumps(r))) : r)).then(
      (result) => {
        if (result instanceof Opened) {
          ack?.({ result: result.result });
          result.release();
        } else if (result instanceof Raw) {
          ack?.(new RawJson(`{"result":${result.text}}`));
        } else {
          ack?.({ result: result ?? null });
        }
      },
      (err) => {
        if (!(err instanceof ContractError)) console.error(err);
        const e = asContractError(err);
        ack?.({ error: { code: e.code, message: e.message } });
      });
  });
});

listen(server);
onStop(() => new Promise((resolve) => {
  io.close();
  server.close(() => store.close().finally(resolve));
  server.closeIdleConnections();
}));
