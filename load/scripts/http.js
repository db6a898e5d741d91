// REST, GraphQL and SOAP (an XML envelope POSTed): one HTTP request per operation on the VU's kept-alive
// connection (k6 keeps one per VU). The request (method, url, body, headers)
// is built by the runner from the lab's own clients, so every implementation
// of a protocol gets the same bytes.
import http from 'k6/http';
import { failed, latency, ops, plan } from './common.js';

export { options } from './common.js';

const req = plan.request;
const params = { headers: req.headers || {}, timeout: plan.timeout || '10s', responseType: 'text' };
const calls = plan.calls || 1;

function once() {
  const res = http.request(req.method, req.url, req.body === null ? null : req.body, params);
  const t = res.timings;
  // From the first byte of waiting for a connection to the last byte read.
  const ms = t.blocked + t.connecting + t.duration;
  if (res.error_code) {
    failed(res.error_code === 1050 ? 'timeout' : `k6_${res.error_code}`);
  } else if (plan.protocol === 'soap' && res.body.indexOf('Fault>') !== -1) {
    // A SOAP Fault (HTTP 500): the contract's code is in its <detail><code>
    const m = /<(?:[A-Za-z0-9_]+:)?code>([A-Z_]+)</.exec(res.body);
    failed(m ? m[1] : 'soap_fault');
  } else if (res.status >= 400 || res.status === 0) {
    failed(`http_${res.status}`);
  } else if (plan.protocol === 'graphql' && res.body.indexOf('"errors"') !== -1) {
    const m = /"code"\s*:\s*"([A-Z_]+)"/.exec(res.body);
    failed(m ? m[1] : 'graphql_error');
  } else {
    ops.add(1);
    latency.add(ms);
    return;
  }
  latency.add(ms, { failed: 'true' });
}

export default function () {
  for (let i = 0; i < calls; i++) once();
}
