// The strict protobuf decoding of the lab's connect-node services (the Games
// service and its conformance server): what @bufbuild/protobuf 1.x lets through
// and the contract refuses is INVALID_ARGUMENT, as services/connect/go_connect/codec
// and python_connectrpc/codec.py refuse it. @bufbuild/protobuf keeps an unknown
// field (readUnknownFields) or drops it, reads a known field sent in another wire
// type as if it were its own, and replaces invalid UTF-8; and connect-node answers
// any binary parse error as INTERNAL (its createBinarySerialization). So each
// request type's fromBinary first checks the message on the wire against its
// descriptor (services/common/node/pbwire.js, the check grpc/node_grpcjs makes
// on proto-loader's descriptors): every field number known, in its wire type
// (or packed), strings valid UTF-8, no truncation. A message that fails is handed to the method as the
// empty message marked REJECTED, and the interceptor `refuseRejected` answers it
// with INVALID_ARGUMENT before the method runs. (JSON needs none of this:
// connect-node's jsonOptions.ignoreUnknownFields=false refuses unknown fields,
// and a JSON parse error is already INVALID_ARGUMENT.)
import { BinaryReader, MethodIdempotency, ScalarType } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { WIRE, WireError, wireCheck } from '../../common/node/pbwire.js';

const REJECTED = Symbol('rejected');

function wireTypeOf(field) {
  if (field.kind === 'message' || field.kind === 'map') return WIRE.LEN;
  if (field.kind === 'enum') return WIRE.VARINT;
  switch (field.T) {
    case ScalarType.STRING: case ScalarType.BYTES: return WIRE.LEN;
    case ScalarType.DOUBLE: case ScalarType.FIXED64: case ScalarType.SFIXED64: return WIRE.I64;
    case ScalarType.FLOAT: case ScalarType.FIXED32: case ScalarType.SFIXED32: return WIRE.I32;
    default: return WIRE.VARINT;
  }
}

/** Checks the binary message `bytes` against `type` (a @bufbuild/protobuf MessageType): the shared
 * check (services/common/node/pbwire.js) on @bufbuild/protobuf's descriptors; throws a WireError. */
export const checkWire = wireCheck((type) => ({
  name: type.typeName.slice(type.typeName.lastIndexOf('.') + 1),
  fields: new Map(type.fields.list().map((f) => [f.no, {
    wire: wireTypeOf(f),
    repeated: f.repeated || f.kind === 'map',
    string: f.kind === 'scalar' && f.T === ScalarType.STRING,
    message: f.kind === 'message' ? f.T : null, // a map's entries are not looked into
  }])),
}));

/** `type` with a fromBinary that checks the wire first and marks a message that fails it. */
function strictType(type) {
  return class extends type {
    static fromBinary(bytes, options) {
      try {
        checkWire(type, bytes);
      } catch (err) {
        if (!(err instanceof WireError)) throw err;
        const message = new type();
        message[REJECTED] = new ConnectError(err.message, Code.InvalidArgument);
        return message;
      }
      return type.fromBinary(bytes, options);
    }
  };
}

/** A copy of the ServiceType `service` with only the methods of `serve` (local names), each with
 * a strict input type, and those of `noSideEffects` marked so (Connect's GET reaches them). */
export function strictService(service, serve, noSideEffects = []) {
  const methods = {};
  for (const name of serve) {
    const method = service.methods[name];
    if (!method) throw new Error(`${service.typeName} has no method ${name}`);
    methods[name] = {
      ...method,
      I: strictType(method.I),
      ...(noSideEffects.includes(name) ? { idempotency: MethodIdempotency.NoSideEffects } : {}),
    };
  }
  return { ...service, methods };
}

/** The interceptor answering a rejected request message with its INVALID_ARGUMENT. */
export const refuseRejected = (next) => async (request) => {
  const rejected = request.message?.[REJECTED];
  if (rejected) throw rejected;
  return next(request);
};

// @bufbuild/protobuf 1.x reads strings with a default TextDecoder, which drops a byte order mark
// (U+FEFF) at a string's start: a tag "\uFEFF" was stored as "" (tests/test_fuzz.py). Strings are
// read as sent with one that keeps it; connect-node's binaryOptions (readerFactory).
const KEEP_BOM = new TextDecoder('utf-8', { ignoreBOM: true });
export const binaryOptions = { readerFactory: (bytes) => new BinaryReader(bytes, KEEP_BOM) };
