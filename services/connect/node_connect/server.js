// Connect RPC with connect-node (@connectrpc/connect-node 1.7.0 on
// @bufbuild/protobuf 1.10): the Games service of contract/games.proto over the
// shared Node.js store, from one request handler (connectNodeAdapter) that
// speaks the three wire protocols connect-node serves: Connect (unary as a
// plain HTTP POST, or a GET for the calls without side effects), gRPC and
// gRPC-Web, each with the protobuf and the JSON codec, on one port: HTTP/1.1
// and cleartext HTTP/2 (h2c, prior knowledge: gRPC needs HTTP/2) told apart by
// the connection's first bytes, or both by ALPN over TLS (lab/axes.py, axis
// tls; services/common/node/env.js, createHttpAndH2Server).
//
// Why 1.x: connect-node 2.x needs Node.js >= 22, and every Node.js service of
// the lab runs on the one Node.js of the machine (20.20): a second, pinned
// runtime for this service alone would make the Node.js services' figures
// differ by runtime as well as by library. 1.7.0 needs Node.js >= 16.
//
// The types are made at run time from protoc's descriptors of games.proto
// (gen/games.js, `python -m lab.codegen`) by @bufbuild/protobuf's
// createRegistryFromDescriptors. Errors are the contract's codes as Connect
// codes (contract/contract.json, column "connect"). A request that is not a
// valid message, or that carries unknown or mistyped fields, is
// INVALID_ARGUMENT (./strict.js for protobuf; connect-node's own JSON options
// for JSON); one over 64 KiB is RESOURCE_EXHAUSTED (connect-node's readMaxBytes).
// Subscribe, the push feed's server stream, is not served over Connect.
import { createRegistryFromDescriptors, protoBase64 } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { codeFromString } from '@connectrpc/connect/protocol-connect';
import { compressionGzip, connectNodeAdapter } from '@connectrpc/connect-node';
import { COMPRESSION } from '../../common/node/compression.js';
import {
  ContractError, DEFAULT_LIST_LIMIT, ERRORS, FIELDS, LANGUAGE_DETAILS, LANGUAGE_DETAIL_FIELDS,
  MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES, NULLABLE_BOOL, asContractError,
} from '../../common/node/contract.js';
import { createHttpAndH2Server, stopHttpAndH2Server, listen, onStop } from '../../common/node/env.js';
import { Store } from '../../common/node/store.js';
import { FILE_DESCRIPTOR_SET } from './gen/games.js';
import { binaryOptions, refuseRejected, strictService } from './strict.js';

const registry = createRegistryFromDescriptors(protoBase64.dec(FILE_DESCRIPTOR_SET));
const Games = registry.findService('protolab.games.v1.Games');
const Game = registry.findMessage('protolab.games.v1.Game');
const LanguageDetail = registry.findMessage('protolab.games.v1.LanguageDetail');
const GameList = registry.findMessage('protolab.games.v1.GameList');
const Empty = registry.findMessage('protolab.games.v1.Empty');

// The contract's field names (the .proto's) -> @bufbuild/protobuf's property names (lowerCamelCase).
const local = (type) => Object.fromEntries(type.fields.list().map((f) => [f.name, f.localName]));
const GAME = local(Game);
const DETAIL = local(LanguageDetail);

// Each contract error code -> its Connect code (contract.json's "connect" column).
const CONNECT_CODES = Object.fromEntries(Object.entries(ERRORS).map(([code, row]) => {
  const connect = codeFromString(row.connect);
  if (connect === undefined) throw new Error(`contract.json: Connect code ${row.connect} of ${code}`);
  return [code, connect];
}));

const store = new Store();

// A stored game as a Game message (is_kernel_ac: proto3 optional, absent for null).
function toMessage(game) {
  const fields = { id: game.id };
  for (const [name, kind] of Object.entries(FIELDS)) {
    const value = game[name];
    if (kind === LANGUAGE_DETAILS) {
      fields[GAME[name]] = value.map((d) => new LanguageDetail(Object.fromEntries(
        Object.keys(LANGUAGE_DETAIL_FIELDS).map((k) => [DETAIL[k], d[k]]))));
    } else if (!(kind === NULLABLE_BOOL && value === null)) {
      fields[GAME[name]] = value;
    }
  }
  return new Game(fields);
}

// A Game message's fields (without id) as the contract's plain values.
function fromMessage(message) {
  const game = {};
  for (const [name, kind] of Object.entries(FIELDS)) {
    const value = message[GAME[name]];
    if (kind === LANGUAGE_DETAILS) {
      game[name] = value.map((d) => Object.fromEntries(
        Object.keys(LANGUAGE_DETAIL_FIELDS).map((k) => [k, d[DETAIL[k]]])));
    } else {
      game[name] = kind === NULLABLE_BOOL ? value ?? null : value;
    }
  }
  return game;
}

// A method that answers a contract error with its Connect code.
const method = (run) => async (request) => {
  try {
    return await run(request);
  } catch (err) {
    if (err instanceof ConnectError) throw err;
    if (!(err instanceof ContractError)) console.error(err);
    const e = asContractError(err);
    throw new ConnectError(e.message, CONNECT_CODES[e.code]);
  }
};

const implementation = {
  createGame: method(async (m) => {
    if (m.id) throw new ConnectError('id must be empty in CreateGame: the server assigns it', Code.InvalidArgument);
    return toMessage(await store.create(fromMessage(m)));
  }),
  getGame: method(async (m) => toMessage(await store.get(m.id))),
  listGames: method(async (m) => new GameList({
    games: (await store.list(m.limit || DEFAULT_LIST_LIMIT, m.offset)).map(toMessage),
  })),
  updateGame: method(async (m) => toMessage(await store.update(m.id, fromMessage(m)))),
  deleteGame: method(async (m) => {
    await store.delete(m.id);
    return new Empty();
  }),
  health: method(async () => {
    await store.health();
    return new Empty();
  }),
};

// GetGame, ListGames and Health have no side effects: Connect's GET reaches them. (games.proto does
// not mark them: idempotency_level is set here, as go_connect and python_connectrpc set it.)
const service = strictService(Games, Object.keys(implementation), ['getGame', 'listGames', 'health']);

const handler = connectNodeAdapter({
  routes: (router) => router.service(service, implementation),
  readMaxBytes: MAX_REQUEST_BYTES,
  writeMaxBytes: MAX_RESPONSE_BYTES,
  // gzip requests are always read; replies are compressed (to a client that accepts gzip) only
  // with LAB_COMPRESSION=gzip (lab/axes.py, axis compression), then whatever their size.
  acceptCompression: [compressionGzip],
  compressMinBytes: COMPRESSION === 'gzip' ? 0 : Number.MAX_SAFE_INTEGER,
  jsonOptions: { ignoreUnknownFields: false },
  binaryOptions,
  interceptors: [refuseRejected],
});

const served = createHttpAndH2Server({ keepAliveTimeout: 75_000 }, handler);
listen(served.server);
onStop(() => stopHttpAndH2Server(served, store).catch(() => {}));
