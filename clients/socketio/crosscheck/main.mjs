// The socket.io cross-check client: socket.io-client (the version of the lab's
// socket.io server) over the WebSocket transport only, as the lab's Python
// client connects; each call is the lab client's "call" event with an ack
// (contract/socketio-protocol.md), timed on process.hrtime.bigint() (monotonic
// ns) from the emit to the ack decoded. Reads the plan named by its one
// argument (load/crosscheck.py), prints one JSON result line.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { io } from "socket.io-client";

const MAX_ERRORS = 10; // then stop: a service that is gone would cost every call its timeout
const VERSION = JSON.parse(readFileSync(new URL("./node_modules/socket.io-client/package.json", import.meta.url))).version;

function fail(kind, message) {
  return Object.assign(new Error(message), { kind });
}

function connect(request, timeoutMs) {
  const socket = io(request.url, {
    path: request.path, transports: ["websocket"], reconnection: false, forceNew: true, timeout: timeoutMs,
  });
  return new Promise((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("connect_error", (err) => { socket.close(); reject(err); });
  });
}

async function main() {
  if (process.argv.length !== 3) {
    console.error("usage: node main.mjs PLAN.json");
    process.exit(2);
  }
  const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
  if (!(plan.warmup >= 1 && plan.calls >= 1)) throw new Error("warmup and calls must be >= 1");
  const { event, argument } = plan.request;
  const timeoutMs = (plan.timeout_s || 10) * 1000;
  const sent = Buffer.from(JSON.stringify(argument)); // what socket.io-parser writes after '42<id>["call",'
  const out = {
    library: "socket.io-client", version: VERSION, samples_ns: [], errors: {},
    request_sha256: createHash("sha256").update(sent).digest("hex"), request_bytes: sent.length,
  };
  const socket = await connect(plan.request, timeoutMs);
  let failed = 0;
  const call = async () => {
    let reply;
    try {
      reply = await socket.timeout(timeoutMs).emitWithAck(event, argument);
    } catch (err) {
      throw fail(socket.connected ? "timeout" : "disconnected", String(err));
    }
    if (reply === null || typeof reply !== "object") throw fail("ack is not an object", JSON.stringify(reply));
    if (reply.error) throw fail(`error ${reply.error.code}`, reply.error.message);
    if (!("result" in reply)) throw fail("no result", JSON.stringify(reply).slice(0, 200));
  };
  const note = (err) => {
    const kind = err.kind || "transport";
    out.errors[kind] = (out.errors[kind] || 0) + 1;
    out.first_error ??= `${kind}: ${err.message}`;
    return ++failed < MAX_ERRORS;
  };
  try {
    for (let i = 0; i < plan.warmup; i++) {
      try { await call(); } catch (err) { if (!note(err)) return out; }
    }
    for (let i = 0; i < plan.calls; i++) {
      const start = process.hrtime.bigint();
      try {
        await call();
        out.samples_ns.push(Number(process.hrtime.bigint() - start));
      } catch (err) {
        if (!note(err)) return out;
      }
    }
    return out;
  } finally {
    socket.close();
  }
}

main().then((out) => process.stdout.write(JSON.stringify(out) + "\n"), (err) => {
  console.error("crosscheck:", err);
  process.exit(1);
});
