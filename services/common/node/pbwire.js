// A protobuf message checked on the wire against its descriptor, as protobuf's own
// parser checks it in Python and Go (services/grpc/python_grpcio,
// services/common/go/pbgame): every field number known, every field in its wire
// type (or a repeated scalar packed), strings valid UTF-8, no truncation, no
// overlong varint. The Node.js libraries let all of these through (protobufjs
// under grpc-js reads a mistyped field as its own type; @bufbuild/protobuf
// keeps unknown fields and replaces invalid UTF-8), so the lab's Node.js
// protobuf services (grpc/node_grpcjs, connect/node_connect) check before they
// parse. Each describes its descriptors in the one shape this check reads
// (`describe` below), from the library it has: @grpc/proto-loader's or
// @bufbuild/protobuf's.

/** Protobuf's wire types (the tag's low three bits). */
export const WIRE = Object.freeze({ VARINT: 0, I64: 1, LEN: 2, I32: 5 });

/** What the check found wrong; its message names the field and the message type. */
export class WireError extends Error {}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function varint(buffer, at, end) {
  let value = 0n;
  for (let shift = 0n, i = at; i < end && shift < 70n; i += 1, shift += 7n) {
    const byte = buffer[i];
    value |= BigInt(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return [value, i + 1];
  }
  throw new WireError('malformed message: truncated or overlong varint');
}

/** A check of messages whose types `describe(type)` tells as
 *   { name, fields: Map(number -> { wire, repeated, string, message }) }:
 * `wire` the field's wire type (WIRE), `string` true for a string field, `message`
 * the type a nested message field has (handed to `describe` in turn) or null.
 * `type` is whatever the caller names its types by (a full name, a class); each is
 * described once. Returns check(type, bytes), which throws a WireError. */
export function wireCheck(describe) {
  const tables = new Map();
  const table = (type) => {
    if (!tables.has(type)) tables.set(type, describe(type));
    return tables.get(type);
  };
  const check = (type, buffer, start, end) => {
    const { name, fields } = table(type);
    const truncated = () => new WireError(`malformed ${name} message: truncated`);
    let at = start;
    while (at < end) {
      const [tag, next] = varint(buffer, at, end);
      at = next;
      const number = Number(tag >> 3n);
      const wire = Number(tag & 7n);
      const field = fields.get(number);
      const expected = field?.wire;
      const packed = field && field.repeated && !field.message && wire === WIRE.LEN && expected !== WIRE.LEN;
      if (number === 0 || !field || (wire !== expected && !packed)) {
        throw new WireError(`unknown or mistyped field number ${number} in ${name}`);
      }
      if (wire === WIRE.VARINT) {
        [, at] = varint(buffer, at, end);
      } else if (wire === WIRE.I64 || wire === WIRE.I32) {
        at += wire === WIRE.I64 ? 8 : 4;
        if (at > end) throw truncated();
      } else {
        const [length, body] = varint(buffer, at, end);
        if (length > BigInt(end - body)) throw truncated();
        const stop = body + Number(length);
        if (field.string) {
          try {
            utf8.decode(buffer.subarray(body, stop));
          } catch {
            throw new WireError(`malformed ${name} message: field ${number} is not valid UTF-8`);
          }
        } else if (field.message) {
          check(field.message, buffer, body, stop);
        } else if (packed) {
          for (let i = body; i < stop;) {
            if (expected === WIRE.VARINT) [, i] = varint(buffer, i, stop);
            else i += expected === WIRE.I64 ? 8 : 4;
            if (i > stop) throw truncated();
          }
        }
        at = stop;
      }
    }
  };
  return (type, bytes) => check(type, bytes, 0, bytes.length);
}
