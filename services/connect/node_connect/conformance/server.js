// The conformance server of connect/node_connect: the ConformanceService of
// Connect's own conformance suite (connectrpc.com/conformance, run by its
// connectconformance runner with its reference client; clients/connect/
// conformance.py) served by connect-node as the lab's Connect service is
// served: the same library and versions, the same strict protobuf decoding
// (../strict.js) and JSON options, HTTP/1.1 and h2c on one port (env.js,
// createHttpAndH2Server), connect-node's gzip, and the request limit the
// runner asks for.
//
// It serves the unary methods (Unary, IdempotentUnary, as a GET too), the only
// kind the lab's service has, and leaves Unimplemented unregistered, as the
// suite expects; the stream methods are not served, and the runner's
// configuration (conformance.yaml) claims none. It reads the runner's
// ServerCompatRequest (size-delimited protobuf) on stdin, listens on a free
// port of 127.0.0.1, and writes the ServerCompatResponse to stdout. What the
// handlers do follows the suite's own reference server (Apache-2.0), written
// here against connect-node 1.x's API. The suite's types are made at run time
// from protoc's descriptors (gen/conformance.js, `python -m lab.codegen`).
import { Any, createRegistryFromDescriptors, protoBase64 } from '@bufbuild/protobuf';
import { ConnectError, createContextKey, createContextValues } from '@connectrpc/connect';
import { compressionGzip, connectNodeAdapter } from '@connectrpc/connect-node';
import { createHttpAndH2Server, onStop } from '../../../common/node/env.js';
import { binaryOptions, refuseRejected, strictService } from '../strict.js';
import { FILE_DESCRIPTOR_SET } from './gen/conformance.js';

const PACKAGE = 'connectrpc.conformance.v1';
const registry = createRegistryFromDescriptors(protoBase64.dec(FILE_DESCRIPTOR_SET));
const type = (name) => registry.findMessage(`${PACKAGE}.${name}`);
const ServerCompatRequest = type('ServerCompatRequest');
const ServerCompatResponse = type('ServerCompatResponse');
const ConformancePayload = type('ConformancePayload');
const RequestInfo = type('ConformancePayload.RequestInfo');
const ConnectGetInfo = type('ConformancePayload.ConnectGetInfo');
const Header = type('Header');
const UnaryResponse = type('UnaryResponse');
const IdempotentUnaryResponse = type('IdempotentUnaryResponse');

// The query of a Connect GET, for the request info.
const QUERY = createContextKey(null);

async function readDelimited(stream) {
  const chunks = [];
  for await (const chunk of stream) {
    chunks.push(chunk);
    const data = Buffer.concat(chunks);
    if (data.length >= 4 && data.length >= 4 + data.readUInt32BE(0)) {
      return data.subarray(4, 4 + data.readUInt32BE(0));
    }
  }
  throw new Error('stdin ended before the ServerCompatRequest');
}

function headerList(headers) {
  const out = [];
  headers.forEach((value, name) => out.push(new Header({ name, value: [value] })));
  return out;
}

function addHeaders(source, target) {
  for (const header of source) {
    for (const value of header.value) target.append(header.name, value);
  }
}

function requestInfo(request, context) {
  const info = new RequestInfo({ requests: [Any.pack(request)], requestHeaders: headerList(context.requestHeader) });
  const timeout = context.timeoutMs();
  if (timeout !== undefined) info.timeoutMs = BigInt(Math.round(timeout));
  const query = context.values.get(QUERY);
  if (query && [...query.keys()].length > 0) {
    const params = new Map();
    for (const [name, value] of query) params.set(name, [...(params.get(name) ?? []), value]);
    info.connectGetInfo = new ConnectGetInfo({
      queryParams: [...params].map(([name, value]) => new Header({ name, value })),
    });
  }
  return info;
}

// The payload the definition asks for (the request echoed in its request info), or its error
// (the request info among the error's details), after the definition's delay.
async function respond(request, context, Response) {
  const definition = request.responseDefinition;
  const info = requestInfo(request, context);
  if (definition === undefined) return new Response({ payload: new ConformancePayload({ requestInfo: info }) });
  addHeaders(definition.responseHeaders, context.responseHeader);
  addHeaders(definition.responseTrailers, context.responseTrailer);
  if (definition.responseDelayMs > 0) await new Promise((resolve) => { setTimeout(resolve, definition.responseDelayMs); });
  const { case: kind, value } = definition.response;
  if (kind === 'error') {
    const details = value.details.map((any) => ({ type: any.typeUrl.slice(any.typeUrl.lastIndexOf('/') + 1),
      value: any.value }));
    const error = new ConnectError(value.message ?? '', value.code, undefined, [info]);
    error.details = [...details, ...error.details];
    throw error;
  }
  return new Response({ payload: new ConformancePayload({ requestInfo: info, data: kind === 'responseData' ? value : undefined }) });
}

const request = ServerCompatRequest.fromBinary(await readDelimited(process.stdin));
if (request.useTls) {
  console.error('TLS: not claimed by this server\'s configuration (the lab measures its own TLS: lab/axes.py, axis tls)');
  process.exit(1);
}
const Conformance = registry.findService(`${PACKAGE}.ConformanceService`);
const implementation = {
  unary: (m, context) => respond(m, context, UnaryResponse),
  idempotentUnary: (m, context) => respond(m, context, IdempotentUnaryResponse),
};
const handler = connectNodeAdapter({
  routes: (router) => router.service(strictService(Conformance, Object.keys(implementation), ['idempotentUnary']),
    implementation),
  acceptCompression: [compressionGzip],
  // typeRegistry: the request info's google.protobuf.Any holds the suite's requests, in JSON too
  jsonOptions: { ignoreUnknownFields: false, typeRegistry: registry },
  binaryOptions,
  interceptors: [refuseRejected],
  ...(request.messageReceiveLimit > 0 ? { readMaxBytes: request.messageReceiveLimit } : {}),
  contextValues: (req) => {
    const values = createContextValues();
    if (req.method === 'GET') values.set(QUERY, new URL(req.url, 'http://lab').searchParams);
    return values;
  },
});
// keepAliveTimeout as the service's: node:http's 5 s default closes an idle connection the runner's
// client may be reusing at that moment (a reset connection instead of the case's answer)
const { server, http1 } = createHttpAndH2Server({ keepAliveTimeout: 75_000 }, handler);
server.listen({ host: '127.0.0.1', port: 0 }, () => {
  const reply = new ServerCompatResponse({ host: '127.0.0.1', port: server.address().port }).toBinary();
  const size = Buffer.alloc(4);
  size.writeUInt32BE(reply.length);
  process.stdout.write(Buffer.concat([size, reply]));
});
onStop(() => new Promise((resolve) => {
  server.close();
  http1?.closeAllConnections();
  resolve();
}));
