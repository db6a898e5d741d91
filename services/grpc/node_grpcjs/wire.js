// A protobuf message checked on the wire against its descriptor (from
// @grpc/proto-loader), as protobuf's own parser checks it in Python: every
// field number known, every field in its wire type, strings valid UTF-8, no
// truncation. Throws INVALID_ARGUMENT.
import { invalid } from '../../common/node/contract.js';

const VARINT = 0;
const I64 = 1;
const LEN = 2;
const I32 = 5;
const WIRE_TYPE = {
  TYPE_BOOL: VARINT, TYPE_INT32: VARINT, TYPE_INT64: VARINT, TYPE_UINT32: VARINT,
  TYPE_UINT64: VARINT, TYPE_SINT32: VARINT, TYPE_SINT64: VARINT, TYPE_ENUM: VARINT,
  TYPE_FIXED64: I64, TYPE_SFIXED64: I64, TYPE_DOUBLE: I64,
  TYPE_FIXED32: I32, TYPE_SFIXED32: I32, TYPE_FLOAT: I32,
  TYPE_STRING: LEN, TYPE_BYTES: LEN, TYPE_MESSAGE: LEN,
};
const utf8 = new TextDecoder('utf-8', { fatal: true });

function fieldTable(definition, typeName, cache) {
  if (!cache.has(typeName)) {
    const descriptor = definition[typeName].type;
    const pkg = typeName.slice(0, typeName.lastIndexOf('.'));
    cache.set(typeName, new Map(descriptor.field.map((f) => [f.number, {
      type: f.type,
      repeated: f.label === 'LABEL_REPEATED',
      message: f.type === 'TYPE_MESSAGE' ? `${pkg}.${f.typeName}` : null,
    }])));
  }
  return cache.get(typeName);
}

function varint(buffer, at, end) {
  let value = 0n;
  for (let shift = 0n, i = at; i < end && shift < 70n; i += 1, shift += 7n) {
    const byte = buffer[i];
    value |= BigInt(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return [value, i + 1];
  }
  throw invalid('malformed message: truncated or overlong varint');
}

const CACHE = new Map();

export function checkWire(definition, typeName, buffer, start = 0, end = buffer.length) {
  const fields = fieldTable(definition, typeName, CACHE);
  const name = typeName.slice(typeName.lastIndexOf('.') + 1);
  let at = start;
  while (at < end) {
    const [tag, next] = varint(buffer, at, end);
    at = next;
    const number = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    const field = fields.get(number);
    const expected = field && WIRE_TYPE[field.type];
    const packed = field && field.repeated && wire === LEN && expected !== LEN;
    if (number === 0 || !field || (wire !== expected && !packed)) {
      throw invalid(`unknown or mistyped field number ${number} in ${name}`);
    }
    if (wire === VARINT) {
      [, at] = varint(buffer, at, end);
    } else if (wire === I64 || wire === I32) {
      at += wire === I64 ? 8 : 4;
      if (at > end) throw invalid(`malformed ${name} message: truncated`);
    } else {
      const [length, body] = varint(buffer, at, end);
      const stop = body + Number(length);
      if (length > BigInt(end - body)) throw invalid(`malformed ${name} message: truncated`);
      if (field.type === 'TYPE_STRING') {
        try {
          utf8.decode(buffer.subarray(body, stop));
        } catch {
          throw invalid(`malformed ${name} message: field ${number} is not valid UTF-8`);
        }
      } else if (field.message) {
        checkWire(definition, field.message, buffer, body, stop);
      } else if (packed) {
        for (let i = body; i < stop;) {
          if (expected === VARINT) [, i] = varint(buffer, i, stop);
          else i += expected === I64 ? 8 : 4;
          if (i > stop) throw invalid(`malformed ${name} message: truncated`);
        }
      }
      at = stop;
    }
  }
}
