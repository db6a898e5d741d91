// The plain HTTP side of a WebSocket server (ws, socket.io): GET /health pings
// the database and answers {"status": "ok"} or the contract's error; any other
// route is NOT_FOUND.
import { asContractError } from './contract.js';
import { dumps } from './json.js';

export function healthHandler(store) {
  return async (req, res) => {
    let status = 200;
    let body = { status: 'ok' };
    if (req.method === 'GET' && req.url === '/health') {
      try {
        await store.health();
      } catch (err) {
        const e = asContractError(err);
        status = e.http;
        body = { error: { code: e.code, message: e.message } };
      }
    } else {
      status = 404;
      body = { error: { code: 'NOT_FOUND', message: `no route ${req.method} ${req.url}` } };
    }
    const text = dumps(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };
}
