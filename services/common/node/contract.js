// The contract as data (contract/contract.json, path in LAB_CONTRACT): the
// game's fields and types, the limits, the error table, and validation that
// rejects exactly what contract/game.py rejects (exact JSON types, every field
// present, no unknown field, nested language_details objects).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const path = process.env.LAB_CONTRACT
  || fileURLToPath(new URL('../../../contract/contract.json', import.meta.url));

export const CONTRACT = JSON.parse(readFileSync(path, 'utf8'));
export const FIELDS = CONTRACT.fields; // name -> kind, in the contract's order
export const FIELD_NAMES = Object.keys(FIELDS);
export const LANGUAGE_DETAIL_FIELDS = CONTRACT.language_detail_fields;
export const LIMITS = CONTRACT.limits;
export const ERRORS = CONTRACT.errors; // code -> {http, grpc, meaning}
export const MAX_REQUEST_BYTES = LIMITS.max_request_bytes;
export const MAX_RESPONSE_BYTES = LIMITS.max_response_bytes;
export const MAX_URI_BYTES = LIMITS.max_uri_bytes;
export const MAX_LIST_LIMIT = LIMITS.max_list_limit;
export const DEFAULT_LIST_LIMIT = LIMITS.default_list_limit;
export const MAX_OFFSET = LIMITS.max_offset;
export const MAX_FRAME_BYTES = LIMITS.max_frame_bytes;
const ID_RE = new RegExp(CONTRACT.id_pattern);

export const STR = 'string';
export const STR_LIST = 'list of string';
export const BOOL = 'bool';
export const NULLABLE_BOOL = 'bool or null';
export const LANGUAGE_DETAILS = 'list of language detail';

export class ContractError extends Error {
  constructor(code, message) {
    super(message);
    if (!(code in ERRORS)) throw new Error(`unknown contract error code ${code}`);
    this.code = code;
  }

  get http() { return ERRORS[this.code].http; }
  get grpc() { return ERRORS[this.code].grpc; }
}

export const invalid = (message) => new ContractError('INVALID_ARGUMENT', message);
export const CODE_OF_HTTP_STATUS = Object.fromEntries(
  Object.entries(ERRORS).map(([code, row]) => [row.http, code]));

// Python's repr-ish rendering of a value in messages.
const show = (value) => {
  if (value instanceof JsonNumber) return value.source;
  try { return JSON.stringify(value) ?? String(value); } catch { return String(value); }
};

// The name Python would give the JSON value's type (the messages read alike).
export function typeName(value) {
  if (value === null) return 'NoneType';
  if (Array.isArray(value)) return 'list';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  if (value instanceof JsonNumber) return value.integer ? 'int' : 'float';
  return { string: 'str', boolean: 'bool', object: 'dict' }[typeof value] ?? typeof value;
}

// A number JSON.parse cannot represent as Python does: a float written with a
// point or exponent (5.0, 1e2: Python floats, never an int) or an integer
// beyond 2**53 (exact in Python). See json.js.
export class JsonNumber {
  constructor(source) {
    this.source = source;
    this.integer = /^-?[0-9]+$/.test(source);
  }

  toJSON() { return Number(this.source); }
}

const isString = (v) => typeof v === 'string';
// A string that cannot be encoded in UTF-8 (a lone surrogate) is not a value
// the database can store unchanged: reject it rather than store U+FFFD.
const wellFormed = (v) => v.isWellFormed();

export function checkString(path, value) {
  if (!isString(value)) throw invalid(`field '${path}' must be a string, got ${typeName(value)}`);
  if (!wellFormed(value)) throw invalid(`field '${path}' is not valid Unicode (a lone surrogate)`);
}

function checkValue(path, kind, value) {
  let ok;
  switch (kind) {
    case STR: ok = isString(value); break;
    case BOOL: ok = typeof value === 'boolean'; break;
    case NULLABLE_BOOL: ok = value === null || typeof value === 'boolean'; break;
    case STR_LIST: ok = Array.isArray(value) && value.every(isString); break;
    case LANGUAGE_DETAILS: ok = Array.isArray(value); break;
    default: throw new Error(`unknown kind ${kind}`);
  }
  if (!ok) throw invalid(`field '${path}' must be a ${kind}, got ${typeName(value)}`);
  if (kind === STR && !wellFormed(value)) throw invalid(`field '${path}' is not valid Unicode (a lone surrogate)`);
  if (kind === STR_LIST) {
    value.forEach((item, i) => {
      if (!wellFormed(item)) throw invalid(`field '${path}[${i}]' is not valid Unicode (a lone surrogate)`);
    });
  }
  if (kind === LANGUAGE_DETAILS) {
    return value.map((item, i) => checkObject(`${path}[${i}]`, LANGUAGE_DETAIL_FIELDS, item));
  }
  return kind === STR_LIST ? [...value] : value;
}

const isPlainObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v)
  && !(v instanceof JsonNumber) && !Buffer.isBuffer(v);

// Returns a new object with exactly `fields`, in their order.
function checkObject(path, fields, obj) {
  if (!isPlainObject(obj)) throw invalid(`${path || 'game'} must be an object, got ${typeName(obj)}`);
  for (const key of Object.keys(obj)) {
    if (!Object.hasOwn(fields, key)) throw invalid(`unknown field ${show(key)} in ${path || 'game'}`);
  }
  for (const key of Object.keys(fields)) {
    if (!Object.hasOwn(obj, key)) throw invalid(`missing field ${show(key)} in ${path || 'game'}`);
  }
  const out = {};
  for (const [key, kind] of Object.entries(fields)) {
    out[key] = checkValue(path ? `${path}.${key}` : key, kind, obj[key]);
  }
  return out;
}

/** The game with its fields in contract order, or throws INVALID_ARGUMENT. */
export function checkGame(game) {
  return checkObject('', FIELDS, game);
}

export function checkId(id) {
  if (!isString(id) || !ID_RE.test(id)) {
    throw invalid(`invalid id ${show(id)}: expected 1-12 digits or 24 hex digits`);
  }
  return id;
}

// An integer as Python's json reads it: not a bool, not a float (5.0, 1e2).
function exactInteger(value) {
  if (typeof value === 'number') return Number.isInteger(value) ? value + 0 : null;
  if (value instanceof JsonNumber && value.integer) return Number(value.source);
  return null;
}

export function checkPage(limit, offset) {
  const l = exactInteger(limit);
  if (l === null || l < 1 || l > MAX_LIST_LIMIT) {
    throw invalid(`invalid limit ${show(limit)}: expected an integer 1..${MAX_LIST_LIMIT}`);
  }
  const o = exactInteger(offset);
  if (o === null || o < 0 || o > MAX_OFFSET) {
    throw invalid(`invalid offset ${show(offset)}: expected an integer 0..${MAX_OFFSET}`);
  }
  return [l, o];
}

export function checkSize(size) {
  if (size > MAX_REQUEST_BYTES) {
    throw new ContractError('RESOURCE_EXHAUSTED',
      `request of ${size} bytes exceeds the limit of ${MAX_REQUEST_BYTES}`);
  }
}

// An HTTP request target (path and query) over max_uri_bytes.
export function checkUriSize(size) {
  if (size > MAX_URI_BYTES) {
    throw new ContractError('RESOURCE_EXHAUSTED', `request target of ${size} bytes exceeds the limit of ${MAX_URI_BYTES}`);
  }
}

// An answer over max_response_bytes (a page of large games) is RESOURCE_EXHAUSTED,
// as contract/game.py check_response_size says it.
export function checkResponseSize(size) {
  if (size > MAX_RESPONSE_BYTES) {
    throw new ContractError('RESOURCE_EXHAUSTED',
      `the answer would be ${size} bytes, over the limit of ${MAX_RESPONSE_BYTES}: ask for fewer games`);
  }
}

// The answer's text when it is within max_response_bytes; throws RESOURCE_EXHAUSTED when not.
export function sized(text) {
  // A string of n UTF-16 units is at most 3n bytes of UTF-8: most answers skip the count.
  if (text.length * 3 > MAX_RESPONSE_BYTES) checkResponseSize(Buffer.byteLength(text));
  return text;
}

// A caught exception as the contract's error: a ContractError as it is,
// anything else as INTERNAL (a bug; logged by the caller).
export function asContractError(err) {
  return err instanceof ContractError ? err : new ContractError('INTERNAL', String(err?.message ?? err));
}
