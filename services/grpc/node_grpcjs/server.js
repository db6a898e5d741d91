// gRPC: @grpc/grpc-js with the service loaded from contract/games.proto by
// @grpc/proto-loader; server reflection (@grpc/reflection) and
// grpc.health.v1 (grpc-health-check) beside it.
//
// As services/grpc/python_grpcio does, a request is checked on the wire before
// it is decoded: an unknown field number, a known field sent with the wrong
// wire type, invalid UTF-8 in a string or a truncated message is
// INVALID_ARGUMENT (protobufjs would skip the first, misread the second and
// replace the third). A request over 64 KiB is refused by grpc-js with
// RESOURCE_EXHAUSTED.
//
// Subscribe serves the push feeds (contract/push.md, "Over gRPC") as a server
// stream, on the push code the SSE, ws and socket.io services share
// (services/common/node/push.js), each message typed here.
import { once } from 'node:events';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation, protoPath as HEALTH_PROTO } from 'grpc-health-check';
import {
  ContractError, DEFAULT_LIST_LIMIT, FIELDS, LANGUAGE_DETAILS, LANGUAGE_DETAIL_FIELDS,
  MAX_REQUEST_BYTES, NULLABLE_BOOL, STR_LIST, asContractError, invalid,
} from '../../common/node/contract.js';
import { grpcServerCredentials, listen, onStop } from '../../common/node/env.js';
import {
  PUSH, nowNs, run as runFeed, subscription,
} from '../../common/node/push.js';
import { Store } from '../../common/node/store.js';
import { checkWire } from './wire.js';

const PROTO = fileURLToPath(new URL('../../../contract/games.proto', import.meta.url));
const PACKAGE = 'protolab.games.v1';
const SERVICE = `${PACKAGE}.Games`;

const definition = protoLoader.loadSync(PROTO, {
  keepCase: true, longs: String, enums: String, defaults: true, oneofs: true,
});
const store = new Store();

// A request that fails the wire check is handed to the method as a Rejected
// (a deserializer that throws would make grpc-js answer INTERNAL).
class Rejected {
  constructor(error) { this.error = error; }
}

// The service with each request deserializer checking the wire first.
const service = Object.fromEntries(Object.entries(definition[SERVICE]).map(([name, method]) => {
  const typeName = method.requestType.type.name;
  return [name, {
    ...method,
    requestDeserialize(buffer) {
      try {
        checkWire(definition, `${PACKAGE}.${typeName}`, buffer);
        return method.requestDeserialize(buffer);
      } catch (err) {
        return new Rejected(err instanceof ContractError ? err
          : invalid(`malformed ${typeName} message: ${err.message}`));
      }
    },
  }];
}));

// A Game message as proto3 serializes it: default values left out (protobufjs
// would write an empty string or false it was given), null is_kernel_ac absent.
function toMessage(game) {
  const message = {};
  if (game.id) message.id = game.id;
  for (const [name, kind] of Object.entries(FIELDS)) {
    const value = game[name];
    if (kind === LANGUAGE_DETAILS) {
      if (value.length) {
        message[name] = value.map((d) => Object.fromEntries(
          Object.keys(LANGUAGE_DETAIL_FIELDS).filter((k) => d[k]).map((k) => [k, d[k]])));
      }
    } else if (kind === STR_LIST) {
      if (value.length) message[name] = value;
    } else if (kind === NULLABLE_BOOL) {
      if (value !== null && value !== undefined) message[name] = value;
    } else if (value) {
      message[name] = value;
    }
  }
  return message;
}

// The game's fields (without id) as plain JSON values.
function fromMessage(message) {
  const game = {};
  for (const [name, kind] of Object.entries(FIELDS)) {
    if (kind === LANGUAGE_DETAILS) {
      game[name] = message[name].map((d) => Object.fromEntries(
        Object.keys(LANGUAGE_DETAIL_FIELDS).map((k) => [k, d[k]])));
    } else if (kind === NULLABLE_BOOL) {
      game[name] = message[`_${name}`] === name ? message[name] : null;
    } else {
      game[name] = message[name];
    }
  }
  return game;
}

function rpc(run) {
  return (call, callback) => {
    const request = call.request;
    if (request instanceof Rejected) {
      callback({ code: grpc.status.INVALID_ARGUMENT, details: request.error.message });
      return;
    }
    Promise.resolve().then(() => run(request)).then(
      (reply) => callback(null, reply),
      (err) => {
        if (!(err instanceof ContractError)) console.error(err);
        const e = asContractError(err);
        callback({ code: grpc.status[e.grpc], details: e.message });
      });
  };
}

// Fields 1..11 of the synthetic event (contract.json push.synthetic_event) as
// SyntheticEvent's fields; sent_ns (int64, as a decimal string) per message.
const EVENT_TAIL = Object.fromEntries(PUSH.synthetic_event.slice(1).map((v, i) => [`field_${i + 1}`, v]));

function refuse(call, err) {
  if (!(err instanceof ContractError)) console.error(err);
  const e = asContractError(err);
  call.emit('error', { code: grpc.status[e.grpc], details: e.message });
}

// A server stream of the feed: its opening is the response's headers
// ("subscribed: <feed>"), a bounded feed's end the OK status with trailer
// "sent: <N>", an error the stream's status.
async function subscribe(call) {
  const m = call.request;
  if (m instanceof Rejected) {
    refuse(call, m.error);
    return;
  }
  let stopped = false;
  call.on('cancelled', () => { stopped = true; });
  let sub;
  try {
    // proto3 optional: present when its synthetic oneof names it; int64 arrives as a decimal string
    const params = {};
    for (const name of Object.keys(PUSH.synthetic_params)) {
      if (m[`_${name}`] === name) params[name] = Number(m[name]);
    }
    sub = subscription(m.feed, params, m._last_event_id === 'last_event_id' ? m.last_event_id : undefined);
  } catch (err) {
    refuse(call, err);
    return;
  }
  const gone = new Promise((resolve) => { call.on('cancelled', resolve); call.on('close', resolve); });
  let result;
  try {
    result = await runFeed(store, sub, {
      open: async () => {
        const headers = new grpc.Metadata();
        headers.set('subscribed', sub.feed);
        call.sendMetadata(headers);
      },
      // One send time per message: the same event, serialized `batch` times.
      synthetic: (batch) => new Array(batch).fill({ sent_ns: nowNs().toString(), ...EVENT_TAIL }),
      change: ({ type, id, game }) => ({ type, id: String(id), game: game ? toMessage(game) : undefined }),
      deliver: async (id, message) => {
        const body = sub.feed === 'synthetic' ? { id, events: message } : { id, change: message };
        if (!call.write(body)) await Promise.race([once(call, 'drain'), gone]);
      },
      stopped: () => stopped,
    });
  } catch (err) {
    refuse(call, err);
    return;
  }
  if (result.end) {
    const trailers = new grpc.Metadata();
    trailers.set('sent', String(result.end.sent));
    call.end(trailers);
  } else if (result.error) {
    refuse(call, result.error);
  } else if (!stopped) {
    call.end();
  }
}

const handlers = {
  Subscribe: subscribe,
  CreateGame: rpc(async (m) => {
    if (m.id) throw invalid('id must be empty in CreateGame: the server assigns it');
    return toMessage(await store.create(fromMessage(m)));
  }),
  GetGame: rpc(async (m) => toMessage(await store.get(m.id))),
  ListGames: rpc(async (m) => ({
    games: (await store.list(m.limit || DEFAULT_LIST_LIMIT, m.offset)).map(toMessage),
  })),
  UpdateGame: rpc(async (m) => toMessage(await store.update(m.id, fromMessage(m)))),
  DeleteGame: rpc(async (m) => {
    await store.delete(m.id);
    return {};
  }),
  Health: rpc(async () => {
    await store.health();
    return {};
  }),
};

const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_REQUEST_BYTES });
server.addService(service, handlers);
// grpc.health.v1 says the process serves; the contract's Health rpc also reaches the database.
new HealthImplementation({ '': 'SERVING', [SERVICE]: 'SERVING' }).addToServer(server);
// Reflection lists what the server serves: the contract's service and
// grpc.health.v1 (as grpcio's and grpc-go's reflection do).
const reflected = protoLoader.loadSync([PROTO, HEALTH_PROTO], { keepCase: true, longs: String, enums: String });
new ReflectionService(reflected).addToServer(server);

// grpc-js's bindAsync listens with Node.js's default backlog (511) and takes
// no other: the lab's own listener (env.js: listen, BACKLOG) hands each
// accepted connection to the gRPC server (which does the TLS handshake of the
// tls variants itself: env.js, grpcServerCredentials).
const injector = server.createConnectionInjector(grpcServerCredentials(grpc));
const listener = net.createServer((socket) => {
  socket.setNoDelay(true);
  injector.injectConnection(socket);
});
listen(listener);
onStop(() => new Promise((resolve) => {
  listener.close();
  const timer = setTimeout(() => { injector.destroy(); server.forceShutdown(); }, 2000);
  injector.drain(1000);
  server.tryShutdown(() => {
    clearTimeout(timer);
    store.close().finally(resolve);
  });
}));
