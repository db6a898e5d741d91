// Server-Sent Events (contract/push.md) on Node.js's own http and http2
// modules, no framework: GET /events?feed=...; HTTP/1.1 and cleartext HTTP/2
// (h2c, prior knowledge) on one port, told apart by the connection's first
// bytes. A push service: the feeds and a health call, no CRUD.
import { constants, createGzip } from 'node:zlib';
import { gzipFor, sendWhole } from '../../common/node/compression.js';
import { ContractError, asContractError, invalid } from '../../common/node/contract.js';
import { createHttpAndH2Server, stopHttpAndH2Server, listen, onStop } from '../../common/node/env.js';
import { dumps } from '../../common/node/json.js';
import { PUSH, run, subscription } from '../../common/node/push.js';
import { Store } from '../../common/node/store.js';

const store = new Store();
const KEEPALIVE_MS = PUSH.keepalive_seconds * 1000;

function respondJson(res, status, body) {
  sendWhole(res, status, { 'content-type': 'application/json' }, dumps(body));
}
const fail = (res, err, status) => {
  const e = asContractError(err);
  if (!(err instanceof ContractError)) console.error(err);
  respondJson(res, status ?? e.http, { error: { code: e.code, message: e.message } });
};

// The query's parameters, each at most once.
function queryParams(url) {
  const params = {};
  for (const [name, value] of url.searchParams) {
    if (Object.hasOwn(params, name)) throw invalid(`query parameter '${name}' given more than once`);
    params[name] = value;
  }
  return params;
}

async function events(req, res, url) {
  let sub;
  try {
    const { feed, ...params } = queryParams(url);
    const lastEventId = req.headers['last-event-id'];
    sub = subscription(feed, params, lastEventId, { fromQuery: true });
  } catch (err) {
    fail(res, err);
    return;
  }
  let closed = false;
  res.on('close', () => { closed = true; });
  let lastWrite = Date.now();
  // LAB_COMPRESSION=gzip (lab/axes.py, axis `compression`) and a request that asks for
  // it: the stream in HTTP's gzip content coding, one gzip stream piped into the reply,
  // sync-flushed after every write so that each event reaches the client as it is sent.
  const gzip = gzipFor(req) ? createGzip() : null;
  // Resolves once the connection has taken `text` (waits for 'drain' when its buffer is full).
  const write = (text) => new Promise((resolve) => {
    if (closed) { resolve(false); return; }
    lastWrite = Date.now();
    if (gzip) {
      gzip.write(text);
      gzip.flush(constants.Z_SYNC_FLUSH, () => resolve(!closed));
      return;
    }
    if (res.write(text)) { resolve(true); return; }
    const done = () => { res.off('drain', done); res.off('close', done); resolve(!closed); };
    res.on('drain', done);
    res.on('close', done);
  });
  const keepalive = setInterval(() => {
    if (Date.now() - lastWrite >= KEEPALIVE_MS) write(':\n\n');
  }, 1000);
  try {
    const outcome = await run(store, sub, {
      open: async () => {
        res.writeHead(200, {
          'content-type': 'text/event-stream', 'cache-control': 'no-cache',
          ...(gzip ? { 'content-encoding': 'gzip', vary: 'Accept-Encoding' } : {}),
        });
        gzip?.pipe(res);
        await write(`: subscribed ${sub.feed}\n\n`);
      },
      deliver: (id, data) => write(`id: ${id}\nevent: ${sub.feed}\ndata: ${data}\n\n`),
      stopped: () => closed,
    });
    if (outcome.end) await write(`event: end\ndata: ${dumps(outcome.end)}\n\n`);
    else if (outcome.error) {
      await write(`event: error\ndata: ${dumps({ code: outcome.error.code, message: outcome.error.message })}\n\n`);
    }
    if (!closed) (gzip && res.headersSent ? gzip : res).end();
  } catch (err) {
    // Refused before the stream started (the database, a resume token): the REST spelling.
    if (!res.headersSent) fail(res, err);
    else (gzip ?? res).end();
  } finally {
    clearInterval(keepalive);
  }
}

async function health(res) {
  try {
    await store.health();
    respondJson(res, 200, { status: 'ok' });
  } catch (err) {
    fail(res, err);
  }
}

function handler(req, res) {
  const url = new URL(req.url, 'http://lab');
  const known = url.pathname === PUSH.sse_path || url.pathname === '/health';
  let work;
  if (!known) work = fail(res, new ContractError('NOT_FOUND', `no route ${req.method} ${url.pathname}`));
  else if (req.method !== 'GET') work = fail(res, invalid(`method ${req.method} not allowed`), 405);
  else work = url.pathname === '/health' ? health(res) : events(req, res, url);
  Promise.resolve(work).catch((err) => {
    console.error(err);
    if (!res.headersSent) fail(res, err);
    else res.destroy();
  });
}

// One port for both (services/common/node/env.js): a connection that opens with the HTTP/2
// preface is h2c; over TLS (the tls variants), HTTP/2 or HTTP/1.1 as ALPN chose.
const served = createHttpAndH2Server({ keepAliveTimeout: 75_000 }, handler);
listen(served.server);
onStop(() => stopHttpAndH2Server(served, store).catch(() => {}));
