// JSON as contract/codec.py reads and writes it: compact, non-ASCII kept,
// and read the way Python's json.loads reads it, so that validation rejects
// what Python rejects and keeps what Python keeps:
// - bytes must be UTF-8 (a UTF-8 BOM is skipped, as json.loads does for bytes);
// - a number written as a float (5.0, 1e2) stays a float, and an integer
//   beyond 2**53 stays exact: both come back as a JsonNumber, not as a JS number;
// - NaN, Infinity and -Infinity parse (as Python's json does), as JsonNumbers;
// - a "__proto__" key is an ordinary own key; a repeated key keeps the last value.
// JSON.parse gives all of this for the text clients send (integers below 2**53),
// so it is the fast path; a small exact parser handles the rest.
import { ContractError, JsonNumber, invalid } from './contract.js';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

// Outside strings, a number token that JSON.parse would not read exactly.
const TOKEN = /"(?:[^"\\]|\\.)*"|-?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?/g;
const NON_FINITE = /NaN|Infinity/;

function needsExactParse(text) {
  TOKEN.lastIndex = 0;
  let m;
  while ((m = TOKEN.exec(text)) !== null) {
    const token = m[0];
    if (token.charCodeAt(0) === 34) continue; // a string
    if (m[1] !== undefined || m[2] !== undefined) return true;
    if (!Number.isSafeInteger(Number(token))) return true;
  }
  return false;
}

/** Decode and parse a request body or message (Buffer or string); throws INVALID_ARGUMENT. */
export function parse(data) {
  let text;
  if (typeof data === 'string') {
    text = data;
  } else {
    try {
      text = utf8.decode(data); // ignoreBOM false: a leading UTF-8 BOM is dropped
    } catch (err) {
      throw invalid(`malformed JSON: not UTF-8 (${err.message})`);
    }
  }
  if (!needsExactParse(text)) {
    try {
      return JSON.parse(text);
    } catch (err) {
      if (!NON_FINITE.test(text)) throw invalid(`malformed JSON: ${err.message}`);
    }
  }
  return new ExactParser(text).document();
}

/** Compact JSON, non-ASCII kept (contract/codec.py dumps). */
export const dumps = (value) => JSON.stringify(value);

/** As dumps, with a JsonNumber written as it was read (5.0, big integers, NaN):
 * a value echoed back comes back as Python's json would write it. */
export function dumpsExact(value) {
  if (value instanceof JsonNumber) return value.source;
  if (Array.isArray(value)) return `[${value.map(dumpsExact).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value).map((k) => `${JSON.stringify(k)}:${dumpsExact(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/y;

class ExactParser {
  constructor(text) {
    this.text = text;
    this.i = 0;
  }

  fail(what) {
    return invalid(`malformed JSON: ${what} at position ${this.i}`);
  }

  skip() {
    while (this.i < this.text.length && WS.has(this.text.charCodeAt(this.i))) this.i += 1;
  }

  document() {
    this.skip();
    const value = this.value(0);
    this.skip();
    if (this.i !== this.text.length) throw this.fail('extra data');
    return value;
  }

  literal(word, value) {
    if (this.text.startsWith(word, this.i)) {
      this.i += word.length;
      return { value };
    }
    return null;
  }

  value(depth) {
    if (depth > 1000) throw this.fail('nesting too deep');
    const c = this.text[this.i];
    if (c === '{') return this.object(depth);
    if (c === '[') return this.array(depth);
    if (c === '"') return this.string();
    const lit = this.literal('true', true) ?? this.literal('false', false) ?? this.literal('null', null)
      ?? this.literal('NaN', new JsonNumber('NaN')) ?? this.literal('Infinity', new JsonNumber('Infinity'))
      ?? this.literal('-Infinity', new JsonNumber('-Infinity'));
    if (lit) return lit.value;
    NUMBER.lastIndex = this.i;
    const m = NUMBER.exec(this.text);
    if (!m) throw this.fail('expecting value');
    this.i += m[0].length;
    const n = Number(m[0]);
    return /^-?[0-9]+$/.test(m[0]) && Number.isSafeInteger(n) ? n : new JsonNumber(m[0]);
  }

  string() {
    STRING.lastIndex = this.i;
    const m = STRING.exec(this.text);
    if (!m) throw this.fail('bad string');
    this.i += m[0].length;
    return JSON.parse(m[0]);
  }

  object(depth) {
    const out = {};
    this.i += 1;
    this.skip();
    if (this.text[this.i] === '}') { this.i += 1; return out; }
    for (;;) {
      this.skip();
      if (this.text[this.i] !== '"') throw this.fail('expecting property name');
      const key = this.string();
      this.skip();
      if (this.text[this.i] !== ':') throw this.fail("expecting ':'");
      this.i += 1;
      this.skip();
      // defineProperty: "__proto__" is an own key, as JSON.parse makes it
      Object.defineProperty(out, key, { value: this.value(depth + 1), enumerable: true, writable: true, configurable: true });
      this.skip();
      const c = this.text[this.i];
      this.i += 1;
      if (c === '}') return out;
      if (c !== ',') throw this.fail("expecting ',' or '}'");
    }
  }

  array(depth) {
    const out = [];
    this.i += 1;
    this.skip();
    if (this.text[this.i] === ']') { this.i += 1; return out; }
    for (;;) {
      this.skip();
      out.push(this.value(depth + 1));
      this.skip();
      const c = this.text[this.i];
      this.i += 1;
      if (c === ']') return out;
      if (c !== ',') throw this.fail("expecting ',' or ']'");
    }
  }
}

export { ContractError };
