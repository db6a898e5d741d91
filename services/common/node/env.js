// What every implementation gets from the lab (services/README.md): HOST,
// PORT, LAB_THREADS (the worker budget), TLS when the lab asks for it, and a
// clean stop on SIGTERM/SIGINT.
import { appendFileSync, readFileSync } from 'node:fs';
import { ServerResponse, createServer as createHttp } from 'node:http';
import { createServer as createHttp2, createSecureServer as createHttp2Secure } from 'node:http2';
import { createServer as createHttps } from 'node:https';
import { createServer as createTcp } from 'node:net';
import { Duplex } from 'node:stream';
import tls from 'node:tls';

export const HOST = process.env.HOST ?? '127.0.0.1';
export const PORT = Number.parseInt(process.env.PORT ?? '8000', 10);
// Node.js runs JavaScript on one event loop: the budget is recorded, not used
// to start workers (each manifest's `concurrency` says so).
export const THREADS = Number.parseInt(process.env.LAB_THREADS ?? '4', 10);

/** Calls `stop` (which may return a promise) once on SIGTERM or SIGINT, then exits. */
export function onStop(stop) {
  let stopping = false;
  const handler = async () => {
    if (stopping) return;
    stopping = true;
    const timer = setTimeout(() => process.exit(0), 5000);
    timer.unref();
    try {
      await stop();
    } finally {
      process.exit(0);
    }
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

/** TCP_NODELAY on every accepted connection of a net/http server. */
export function noDelay(server) {
  server.on('connection', (socket) => socket.setNoDelay(true));
  return server;
}

// The listen backlog: connections the kernel completes before the server
// accepts them. Node.js asks for 511 by default; 1,000 clients opening at
// once overflow that, and the overflowing handshakes wait out SYN
// retransmissions (1 s, 3 s, ...). Go asks for the kernel's somaxconn, and
// gunicorn for 2,048 or 4,096 (services/common/gunicorn_*.py); the kernel
// caps the value at net.core.somaxconn.
export const BACKLOG = 4096;

/** Listens on HOST:PORT with the lab's backlog (a node:net, http or http2 server); a port it cannot
 * have (taken, not permitted) ends the process with one line saying so. */
export function listen(server) {
  const refused = (err) => {
    console.error(`cannot listen on ${HOST}:${PORT}: ${err.message}`);
    process.exit(1);
  };
  server.once('error', refused);
  server.once('listening', () => server.off('error', refused));
  return server.listen({ host: HOST, port: PORT, backlog: BACKLOG });
}

// --- TLS (lab/axes.py, axis tls) --------------------------------------------
// LAB_TLS=1.3 or 1.2: the one TLS version the service accepts (its minimum and
// maximum), with LAB_TLS_CERT and LAB_TLS_KEY, the certificate chain and key
// (PEM) the lab made for this run. Unset: cleartext. The process's defaults are
// set too, so that a secure context made by a library (grpc-js) holds the same
// version. The one place a Node.js service's listener is chosen.
const TLS_VERSIONS = { 1.3: 'TLSv1.3', 1.2: 'TLSv1.2' };

function tlsSettings() {
  const want = process.env.LAB_TLS;
  if (!want) return null;
  const version = TLS_VERSIONS[want];
  if (!version) {
    console.error(`LAB_TLS=${want}: expected 1.3 or 1.2`);
    process.exit(1);
  }
  tls.DEFAULT_MIN_VERSION = version;
  tls.DEFAULT_MAX_VERSION = version;
  return {
    cert: readFileSync(process.env.LAB_TLS_CERT),
    key: readFileSync(process.env.LAB_TLS_KEY),
    minVersion: version,
    maxVersion: version,
  };
}

/** The TLS settings (cert, key, minVersion, maxVersion), or null: cleartext. */
export const TLS = tlsSettings();

// A key log the lab names (SSLKEYLOGFILE, set by the wire capture: lab/tls.py): every TLS server of
// the process appends its connections' secrets to it (each tls.Server's 'keylog' event, NSS key log
// lines), so that tshark decrypts what the clients' TLS library logs no keys for. Node's own switch
// for this, --tls-keylog, is a command-line option only; the servers here are made by node:https,
// node:http2, fastify and grpc-js (whose server is not reachable from outside and is handed its
// connections, never listening), so the hook is where each of them gets a connection: tls.Server's
// 'connection' event, before the TLS handshake the event starts.
if (TLS && process.env.SSLKEYLOGFILE) {
  const keylog = process.env.SSLKEYLOGFILE;
  const emit = tls.Server.prototype.emit;
  tls.Server.prototype.emit = function emitLoggingKeys(event, ...args) {
    if (event === 'connection' && !this.listenerCount('keylog')) {
      this.on('keylog', (line) => appendFileSync(keylog, line));
    }
    return emit.call(this, event, ...args);
  };
}

/** Options of a TLS server offering the ALPN protocols `alpn`, or null when cleartext. */
export function tlsOptions(alpn = ['http/1.1']) {
  return TLS && { ...TLS, ALPNProtocols: alpn };
}

// --- the HTTP version (lab/axes.py, axis http) ---------------------------------
// LAB_HTTP=h2: HTTP/2 over TLS, chosen by ALPN (h2, and http/1.1 for a client that
// offers only that: node:http2's allowHTTP1); h2c: cleartext HTTP/2 with prior
// knowledge (node:http2's createServer: HTTP/2 alone on the port, an HTTP/1.1
// request is not understood); unset or h1: HTTP/1.1 as the services always ran.
function httpVersion() {
  const want = process.env.LAB_HTTP || 'h1';
  const problem = !['h1', 'h2', 'h2c'].includes(want) ? 'expected h1, h2 or h2c'
    : want === 'h2' && !TLS ? 'HTTP/2 over TLS, chosen by ALPN: LAB_TLS must be set'
      : want === 'h2c' && TLS ? 'cleartext HTTP/2: LAB_TLS must be unset' : null;
  if (problem) {
    console.error(`LAB_HTTP=${want}: ${problem}`);
    process.exit(1);
  }
  return want;
}

/** "h1", "h2" or "h2c". */
export const HTTP = httpVersion();

/** An HTTP server for the lab's HTTP version: HTTP/1.1 (node:http's, or node:https's over TLS,
 * HTTP/1.1 by ALPN); HTTP/2 over TLS with HTTP/1.1 by ALPN beside it (h2); cleartext HTTP/2 (h2c).
 * `options`: node:http's (keepAliveTimeout), left out of an HTTP/2 server's. */
export function createHttpServer(options, handler) {
  if (HTTP === 'h2') return createHttpAndH2SecureServer({}, handler);
  if (HTTP === 'h2c') return createHttp2({}, handler);
  return TLS ? createHttps({ ...options, ...tlsOptions() }, handler) : createHttp(options, handler);
}

/** fastify's server options for the lab's HTTP version and TLS: { http2, https }. */
export function fastifyServerOptions() {
  if (HTTP === 'h2') return { http2: true, https: { ...tlsOptions(['h2', 'http/1.1']), allowHTTP1: true } };
  if (HTTP === 'h2c') return { http2: true };
  return { https: tlsOptions() }; // node:https over TLS when the lab asks for it, else null: node:http
}

/** HTTP/1.1 and HTTP/2 on one TLS port, chosen by ALPN (node:http2's secure server). */
export function createHttpAndH2SecureServer(options, handler) {
  return createHttp2Secure({ ...options, ...tlsOptions(['h2', 'http/1.1']), allowHTTP1: true }, handler);
}

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

// The socket as a plain stream, with the bytes already read put back in front:
// http2 reads a net.Socket through its native handle, past any unshift().
function replay(socket, first) {
  const stream = new Duplex({
    read() { socket.resume(); },
    write(chunk, encoding, callback) { socket.write(chunk, callback); },
    final(callback) { socket.end(); callback(); },
    destroy(err, callback) { socket.destroy(); callback(err); },
  });
  stream.push(first);
  socket.on('data', (data) => { if (!stream.push(data)) socket.pause(); });
  socket.on('end', () => stream.push(null));
  socket.on('close', () => stream.destroy());
  return stream;
}

// An HTTP/1.1 reply written before its request's body has all arrived (a request over the size
// limit, refused from its Content-Length or its first bytes) closes the connection after it, as Go's
// net/http does: on a kept-alive connection the client may still be sending the rest of that body,
// and Node.js would wait for it before reading the next request (Connect's conformance suite's Go
// client hung there: gRPC-Web over HTTP/1.1, a request over the receive limit and the next one).
// A request without a body (no Content-Length or a zero one, no Transfer-Encoding: a GET) keeps its
// connection whenever it is answered (its `complete` is still false in a handler that answers at once).
// A lingering close, as Go's net/http does it (closeWriteAndWait): after such a reply the socket sends
// its FIN but keeps reading, and dropping, what the client still sends for half a second before it is
// destroyed, so the client's write of the rest of its body does not meet a reset (a broken pipe where
// the reply was already on its way: Connect's conformance case unexpected-content-type, 1 in ~700).
function lingerOnClose(socket) {
  if (!socket || socket.lingering) return;
  socket.lingering = true;
  socket.destroySoon = function destroySoon() {
    this.end();
    this.on('data', () => {});
    this.resume();
    setTimeout(() => this.destroy(), 500).unref();
  };
}

class CloseUnreadResponse extends ServerResponse {
  writeHead(...args) {
    const { headers } = this.req;
    const body = headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
    if (body && !this.req.complete) {
      this.shouldKeepAlive = false;
      lingerOnClose(this.socket);
    }
    return super.writeHead(...args);
  }
}

/** HTTP/1.1 and HTTP/2 on one port, as Go's h2c handler serves them: in cleartext a connection that
 * opens with HTTP/2's preface is h2c (prior knowledge), any other HTTP/1.1 (node:http2's allowHTTP1
 * applies to its secure server only); over TLS, HTTP/2 or HTTP/1.1 as ALPN chose. TCP_NODELAY on
 * every connection; an HTTP/1.1 reply before its request's whole body closes the connection after
 * it (CloseUnreadResponse). { server: to listen(), http1: the HTTP/1.1 server (closeAllConnections) }.
 * `options`: node:http's (keepAliveTimeout). */
export function createHttpAndH2Server(options, handler) {
  if (TLS) {
    const server = createHttpAndH2SecureServer({ Http1ServerResponse: CloseUnreadResponse }, handler);
    server.on('connection', (socket) => socket.setNoDelay(true));
    return { server, http1: null };
  }
  const http1 = createHttp({ ...options, ServerResponse: CloseUnreadResponse }, handler);
  const http2 = createHttp2({}, handler);
  const server = createTcp({ noDelay: true }, (socket) => {
    socket.on('error', () => {});
    socket.once('data', (chunk) => {
      socket.pause();
      const n = Math.min(chunk.length, H2_PREFACE.length);
      if (chunk.subarray(0, n).equals(H2_PREFACE.subarray(0, n))) {
        http2.emit('connection', replay(socket, chunk));
      } else {
        socket.unshift(chunk);
        http1.emit('connection', socket);
        socket.resume();
      }
    });
  });
  return { server, http1 };
}

/** What createHttpAndH2Server made, stopped: no new connection, the kept-alive HTTP/1.1 ones closed,
 * then `store` (the service's database client); resolves when the store is closed. For onStop. */
export function stopHttpAndH2Server({ server, http1 }, store) {
  server.close();
  http1?.closeAllConnections();
  return store.close();
}

/** grpc-js's server credentials: TLS (its own handshake) when the lab asks for it. */
export function grpcServerCredentials(grpc) {
  return TLS
    ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: TLS.cert, private_key: TLS.key }], false)
    : grpc.ServerCredentials.createInsecure();
}
