// The strict protobuf decoding of the lab's connect-node services (the Games
// service and its conformance server): what @bufbuild/protobuf 1.x lets through
// and the contract refuses is INVALID_ARGUMENT, as services/connect/go_connect/codec
// and python_connectrpc/codec.py refuse it. @bufbuild/protobuf keeps an unknown
// field (readUnknownFields) or drops it, reads a known field sent in another wire
// type as if it were its own, and replaces invalid UTF-8; and connect-node answers
// any binary parse error as INTERNAL (its createBinarySerialization). So each
// request type's fromBinary first checks the message on the wire against its
// descriptor: every field number known, in its wire type (or packed), strings
// valid UTF-8, no truncation. A message that fails is handed to the method as the
// empty message marked REJECTED, and the interceptor `refuseRejected` answers it
// with INVALID_ARGUMENT before the method runs. (JSON needs none of this:
// connect-node's jsonOptions.ignoreUnknownFields=false refuses unknown fields,
// and a JSON parse error is already INVALID_ARGUMENT.)
import { BinaryReader, MethodIdempotency, ScalarType, WireType } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';

const REJECTED = Symbol('rejected');
const utf8 = new TextDecoder('utf-8', { fatal: true });

function wireTypeOf(field) {
  if (field.kind === 'message' || field.kind === 'map') return WireType.LengthDelimited;
  if (field.kind === 'enum') return WireType.Varint;
  switch (field.T) {
    case ScalarType.STRING: case ScalarType.BYTES: return WireType.LengthDelimited;
    case ScalarType.DOUBLE: case ScalarType.FIXED64: case ScalarType.SFIXED64: return WireType.Bit64;
    case ScalarType.FLOAT: case ScalarType.FIXED32: case ScalarType.SFIXED32: return WireType.Bit32;
    default: return WireType.Varint;
  }
}

// The bytes of a length-delimited field, refusing a length past the message's end.
function delimited(reader, name) {
  const length = reader.uint32();
  const start = reader.pos;
  if (start + length > reader.len) throw new Error(`${name} is truncated`);
  reader.pos += length;
  return reader.buf.subarray(start, start + length);
}

/** Checks the binary message `bytes` against `type` (a @bufbuild/protobuf MessageType); throws what it finds. */
export function checkWire(type, bytes) {
  const reader = bytes instanceof BinaryReader ? bytes : new BinaryReader(bytes);
  const name = type.typeName.slice(type.typeName.lastIndexOf('.') + 1);
  while (reader.pos < reader.len) {
    const [number, wire] = reader.tag();
    const field = type.fields.find(number);
    const expected = field && wireTypeOf(field);
    const packed = field && field.repeated && field.kind !== 'message' && field.kind !== 'map'
      && wire === WireType.LengthDelimited && expected !== WireType.LengthDelimited;
    if (!field || (wire !== expected && !packed)) {
      throw new Error(`unknown or mistyped field number ${number} in ${name}`);
    }
    if (field.kind === 'message') {
      checkWire(field.T, delimited(reader, name));
    } else if (field.kind === 'scalar' && field.T === ScalarType.STRING && !packed) {
      const bytes = delimited(reader, name);
      try {
        utf8.decode(bytes);
      } catch {
        throw new Error(`field ${number} of ${name} is not valid UTF-8`);
      }
    } else if (wire === WireType.LengthDelimited) {
      delimited(reader, name);
    } else {
      reader.skip(wire);
    }
  }
  if (reader.pos > reader.len) throw new Error(`${name} is truncated`);
}

/** `type` with a fromBinary that checks the wire first and marks a message that fails it. */
function strictType(type) {
  return class extends type {
    static fromBinary(bytes, options) {
      try {
        checkWire(type, bytes);
      } catch (err) {
        const message = new type();
        message[REJECTED] = new ConnectError(`malformed ${type.typeName} message: ${err.message}`,
          Code.InvalidArgument);
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
