// Shared by the protocol scripts: the plan the Python runner wrote (one JSON
// file: target, request, executor), the lab's metrics, and a clock.
//
//   lab_latency  Trend, ms: one operation, from its start (in the open model
//                the iteration's scheduled start) to the decoded reply
//                (gRPC: k6's grpc_req_duration instead)
//   lab_errors   Counter, tagged kind: what went wrong, in the protocol's terms
//   lab_ops      Counter: operations answered correctly
import { Counter, Trend } from 'k6/metrics';

export const plan = JSON.parse(open(__ENV.LAB_PLAN));
export const latency = new Trend('lab_latency', true);
export const errors = new Counter('lab_errors');
export const ops = new Counter('lab_ops');

// k6 runs the executor the runner chose (closed: constant-vus or
// per-vu-iterations; open: constant-arrival-rate). Thresholds are not used:
// the runner judges the run from the raw samples.
export const options = {
  scenarios: { main: plan.executor },
  summaryTrendStats: ['min', 'med', 'p(99)', 'max'],
  discardResponseBodies: false,
  // Fewer tags per sample: smaller raw output.
  systemTags: ['status', 'error_code', 'scenario'],
  setupTimeout: '30s',
  teardownTimeout: '30s',
};

// k6 v1.8.1 gives scripts no sub-millisecond clock (no performance.now):
// HTTP latency comes from k6's request timings and gRPC's from its
// grpc_req_duration (both in microseconds); WebSocket messages are timed with
// this millisecond clock, and the results say so.
export const now = () => Date.now();

export function failed(kind) {
  errors.add(1, { kind: String(kind) });
}
