// gRPC unary calls with k6/net/grpc and contract/games.proto: one channel
// per VU, opened on its first iteration and kept, as a gRPC client would.
import grpc from 'k6/net/grpc';
import { failed, ops, plan } from './common.js';

export { options } from './common.js';

const client = new grpc.Client();
client.load([plan.proto_dir], plan.proto_file);
const calls = plan.calls || 1;
let connected = false;

export default function () {
  if (!connected) {
    client.connect(plan.target, { plaintext: true, timeout: plan.timeout || '10s' });
    connected = true;
  }
  for (let i = 0; i < calls; i++) {
    // Latency: k6's own grpc_req_duration (microseconds; k6 has no
    // sub-millisecond clock for scripts), tagged with the call's status.
    // Only the status is read, so k6 does not turn the reply into a JS object
    // (discardResponseMessage): the generator's CPU per call is what limits
    // it on 2 cores, as ws.js reads replies by pattern for the same reason.
    let res;
    try {
      res = client.invoke(plan.request.method, plan.request.message,
        { timeout: plan.timeout || '10s', discardResponseMessage: true });
    } catch (e) {
      failed('exception');
      continue;
    }
    if (res.status === grpc.StatusOK) {
      ops.add(1);
    } else {
      failed(`grpc_${res.status}`);
    }
  }
}
