// How requests, replies and push messages travel over one WebSocket:
//   ws        the WebSocket protocol's JSON messages (contract/ws-protocol.md):
//             request_id pairs a reply with its request; a message without
//             one is a push message; the connection is ready once open.
//   socketio  socket.io's events and acks over Engine.IO 4 (contract/socketio-protocol.md):
//             the client answers Engine.IO's open packet (0) by connecting
//             to the namespace / (40), and is ready at the server's 40{...};
//             a request is the event "call" with an ack id (42<id>["call",{op,params}]),
//             its reply the ack (43<id>[{result}|{error}]), a push the event
//             "push" (42["push",{...}]); the server's ping (2) is answered (3).
//
// decode(text, socket) -> {id, reply} | {push} | {ready: true} | {closed: reason} | null (handled)

const ws = {
  url: (target) => target,
  readyAtOpen: true,
  encode: (id, op, params) => JSON.stringify({ request_id: id, op, params }),
  decode(text) {
    const message = JSON.parse(text);
    if (message.request_id === undefined) return { push: message };
    return { id: message.request_id, reply: message };
  },
};

const socketio = {
  url: (target) => `${target.replace(/^http/, 'ws')}?EIO=4&transport=websocket`,
  readyAtOpen: false,
  encode: (id, op, params) => `42${id}${JSON.stringify(['call', { op, params }])}`,
  decode(text, socket) {
    if (text === '2') { socket.send('3'); return null; }
    if (text[0] === '0') { socket.send('40'); return null; }
    if (text[0] === '1') return { closed: 'engine.io close' };
    if (text.startsWith('40')) return { ready: true };
    if (text.startsWith('41')) return { closed: 'socket.io disconnect' };
    if (text.startsWith('44')) return { closed: `socket.io connect_error ${text.slice(2)}` };
    if (text.startsWith('43')) {
      const digits = /^\d*/.exec(text.slice(2))[0];
      const args = JSON.parse(text.slice(2 + digits.length));
      return { id: Number(digits), reply: args[0] };
    }
    if (text.startsWith('42')) {
      const args = JSON.parse(text.slice(2));
      return args[0] === 'push' ? { push: args[1] } : { closed: `unexpected event ${args[0]}` };
    }
    return { closed: `unexpected packet ${text.slice(0, 20)}` };
  },
};

export function framing(kind) {
  return kind === 'socketio' ? socketio : ws;
}
