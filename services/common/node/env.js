// What every implementation gets from the lab (services/README.md): HOST,
// PORT, LAB_THREADS (the worker budget), and a clean stop on SIGTERM/SIGINT.
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

/** Listens on HOST:PORT with the lab's backlog (a node:net, http or http2 server). */
export function listen(server) {
  return server.listen({ host: HOST, port: PORT, backlog: BACKLOG });
}
