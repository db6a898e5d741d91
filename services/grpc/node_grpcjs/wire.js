// The wire check of services/common/node/pbwire.js on the descriptors
// @grpc/proto-loader gives (definition[typeName].type: the DescriptorProto as
// an object). Throws INVALID_ARGUMENT.
import { invalid } from '../../common/node/contract.js';
import { WIRE, WireError, wireCheck } from '../../common/node/pbwire.js';

const WIRE_TYPE = {
  TYPE_BOOL: WIRE.VARINT, TYPE_INT32: WIRE.VARINT, TYPE_INT64: WIRE.VARINT, TYPE_UINT32: WIRE.VARINT,
  TYPE_UINT64: WIRE.VARINT, TYPE_SINT32: WIRE.VARINT, TYPE_SINT64: WIRE.VARINT, TYPE_ENUM: WIRE.VARINT,
  TYPE_FIXED64: WIRE.I64, TYPE_SFIXED64: WIRE.I64, TYPE_DOUBLE: WIRE.I64,
  TYPE_FIXED32: WIRE.I32, TYPE_SFIXED32: WIRE.I32, TYPE_FLOAT: WIRE.I32,
  TYPE_STRING: WIRE.LEN, TYPE_BYTES: WIRE.LEN, TYPE_MESSAGE: WIRE.LEN,
};

const checks = new WeakMap();

// One check per proto-loader definition: its types named by their full names.
function checkOf(definition) {
  if (!checks.has(definition)) {
    checks.set(definition, wireCheck((typeName) => {
      const pkg = typeName.slice(0, typeName.lastIndexOf('.'));
      return {
        name: typeName.slice(typeName.lastIndexOf('.') + 1),
        fields: new Map(definition[typeName].type.field.map((f) => [f.number, {
          wire: WIRE_TYPE[f.type],
          repeated: f.label === 'LABEL_REPEATED',
          string: f.type === 'TYPE_STRING',
          message: f.type === 'TYPE_MESSAGE' ? `${pkg}.${f.typeName}` : null,
        }])),
      };
    }));
  }
  return checks.get(definition);
}

/** Checks `buffer`, a message of `typeName` (full name) of the proto-loader `definition`. */
export function checkWire(definition, typeName, buffer) {
  try {
    checkOf(definition)(typeName, buffer);
  } catch (err) {
    throw err instanceof WireError ? invalid(err.message) : err;
  }
}
