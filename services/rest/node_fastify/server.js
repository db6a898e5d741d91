// REST over HTTP/1.1: fastify on Node's http server (contract/openapi.yaml); over HTTP/2
// (LAB_HTTP=h2 or h2c, lab/axes.py) on Node's http2 server.
import { gzipSync } from 'node:zlib';
import Fastify from 'fastify';
import { readBody } from '../../common/node/body.js';
import {
  CODE_OF_HTTP_STATUS, ContractError, DEFAULT_LIST_LIMIT, asContractError, checkUriSize, invalid, sized,
} from '../../common/node/contract.js';
import { COMPRESSION, gzipFor } from '../../common/node/compression.js';
import { BACKLOG, HOST, PORT, fastifyServerOptions, onStop } from '../../common/node/env.js';
import { dumps, parse } from '../../common/node/json.js';
import { Store } from '../../common/node/store.js';

const store = new Store();
const app = Fastify({
  logger: false,
  // node:https over TLS, node:http2 for HTTP/2 (h2 by ALPN, or h2c) when the lab asks for them (env.js)
  ...fastifyServerOptions(),
  keepAliveTimeout: 75_000, // as gunicorn's keepalive: a benchmark never reconnects between rounds
  // A long id is a malformed id (400), or past max_uri_bytes the contract's 414
  // (the hook below), never fastify's own error: above Node's 16 KiB of headers.
  routerOptions: { maxParamLength: 65536 },
  bodyLimit: 1 << 30, // the body is read (and limited) by readBody below
  clientErrorHandler,
});

// Node's own refusals before fastify routes (headers over its 16 KiB: 431, a
// malformed request: 400), in the contract's terms.
function clientErrorHandler(err, socket) {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, code] = err.code === 'HPE_HEADER_OVERFLOW'
    ? [431, 'Request Header Fields Too Large', 'RESOURCE_EXHAUSTED']
    : [400, 'Bad Request', 'INVALID_ARGUMENT'];
  const body = Buffer.from(dumps({ error: { code, message: `${reason}: ${err.code ?? err.message}` } }));
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\n`
      + `Content-Length: ${body.length}\r\n\r\n`);
    socket.write(body);
  }
  socket.destroy(err);
}

// Every body, whatever its Content-Type, is read by the contract's rule and
// parsed as JSON here (as the Python services do). A body over the limit is
// handed on as a RejectedBody: a parser error would make fastify close the
// connection, which the drained body is meant to keep usable.
class RejectedBody {
  constructor(error) { this.error = error; }
}
app.removeAllContentTypeParsers();
app.addContentTypeParser('*', (request, payload, done) => {
  const declared = Number.parseInt(request.headers['content-length'] ?? '', 10);
  readBody(payload, declared).then((body) => done(null, body), (err) => done(null, new RejectedBody(err)));
});

const send = (reply, status, body) => reply.code(status).type('application/json').send(sized(dumps(body)));
const fail = (reply, err) => {
  if (!(err instanceof ContractError)) console.error(err);
  const e = asContractError(err);
  return send(reply, e.http, { error: { code: e.code, message: e.message } });
};

app.setErrorHandler((err, request, reply) => {
  if (err instanceof ContractError || !err.statusCode) return fail(reply, err);
  // fastify's own (a malformed request line, ...): its status, the contract's code
  const status = err.statusCode;
  const code = CODE_OF_HTTP_STATUS[status] ?? (status < 500 ? 'INVALID_ARGUMENT' : 'INTERNAL');
  return send(reply, status, { error: { code, message: err.message } });
});
// What no route takes: 405 with Allow for a known path (the contract's
// INVALID_ARGUMENT), else 404.
function allowed(path) {
  if (path === '/games') return 'GET, HEAD, POST';
  if (path === '/health') return 'GET, HEAD';
  if (/^\/games\/[^/]+$/.test(path)) return 'GET, HEAD, PUT, DELETE';
  return null;
}
app.setNotFoundHandler((request, reply) => {
  const allow = allowed(request.url.split('?', 1)[0]);
  if (allow === null) {
    return send(reply, 404, { error: { code: 'NOT_FOUND', message: `no route ${request.method} ${request.url}` } });
  }
  reply.header('Allow', allow);
  return send(reply, 405, {
    error: { code: 'INVALID_ARGUMENT', message: `method ${request.method} not allowed here: ${allow}` },
  });
});

// A body is JSON (Content-Type application/json), else 415 with the contract's INVALID_ARGUMENT.
class UnsupportedMedia extends ContractError {
  constructor(message) { super('INVALID_ARGUMENT', message); }

  get http() { return 415; }
}

function body(request) {
  if (request.body instanceof RejectedBody) throw request.body.error;
  const media = (request.headers['content-type'] ?? '').split(';', 1)[0].trim().toLowerCase();
  if (media !== 'application/json') {
    throw new UnsupportedMedia(`a body must have Content-Type application/json, not '${media || 'none'}'`);
  }
  return parse(request.body ?? Buffer.alloc(0));
}

// A query parameter: absent -> the default; else ASCII digits only.
function intArg(request, name, fallback) {
  let raw = request.query[name];
  if (Array.isArray(raw)) { // which one counts is not for a server to guess
    throw invalid(`query parameter '${name}' given ${raw.length} times: at most once`);
  }
  if (raw === undefined) return fallback;
  if (!/^[0-9]+$/.test(raw)) throw invalid(`query parameter '${name}' must be a non-negative integer`);
  return Number(raw);
}

// A request target over max_uri_bytes: the contract's 414 (Node's own limit,
// 16 KiB of headers, lies above it).
app.addHook('onRequest', async (request, reply) => {
  try {
    checkUriSize(Buffer.byteLength(request.raw.url));
  } catch (err) {
    reply.code(414).type('application/json').send(dumps({ error: { code: err.code, message: err.message } }));
    return reply;
  }
  return undefined;
});

// LAB_COMPRESSION=gzip (lab/axes.py, axis `compression`): a reply whose request
// asks for gzip (Accept-Encoding) goes out in HTTP's gzip content coding, its
// Content-Length the compressed one (fastify sets it after this hook). Without the
// setting the hook is not there: the base runs as it always did.
if (COMPRESSION === 'gzip') app.addHook('onSend', async (request, reply, payload) => {
  if (!gzipFor(request.raw) || payload === null || payload === undefined || reply.statusCode === 204
      || (typeof payload !== 'string' && !Buffer.isBuffer(payload)) || payload.length === 0) {
    return payload;
  }
  reply.header('Content-Encoding', 'gzip');
  reply.header('Vary', 'Accept-Encoding');
  reply.removeHeader('Content-Length');
  return gzipSync(payload);
});

app.get('/health', async (request, reply) => {
  await store.health();
  return send(reply, 200, { status: 'ok' });
});

app.post('/games', async (request, reply) => {
  const game = await store.create(body(request));
  reply.header('Location', `/games/${game.id}`);
  return send(reply, 201, game);
});

app.get('/games', async (request, reply) => send(reply, 200, await store.list(
  intArg(request, 'limit', DEFAULT_LIST_LIMIT), intArg(request, 'offset', 0))));

app.get('/games/:id', async (request, reply) => send(reply, 200, await store.get(request.params.id)));

app.put('/games/:id', async (request, reply) => send(reply, 200,
  await store.update(request.params.id, body(request))));

app.delete('/games/:id', async (request, reply) => {
  await store.delete(request.params.id);
  return reply.code(204).send();
});

app.server.on('connection', (socket) => socket.setNoDelay(true));
await app.listen({ host: HOST, port: PORT, backlog: BACKLOG });
onStop(async () => {
  await app.close();
  await store.close();
});
