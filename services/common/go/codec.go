package common

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"sort"
	"strconv"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The one JSON encoding of contract/codec.py: compact separators, non-ASCII
// kept as UTF-8 (Python's ensure_ascii=False), only '"', '\' and control
// characters escaped, as Python escapes them, so the bytes on the wire are
// the Python services' bytes and byte counts compare protocols, not encoders.

// DecodeJSON parses one JSON value: objects as map[string]any (a repeated
// key keeps its last value, as in Python), numbers as json.Number. Invalid
// UTF-8 and trailing data are errors, as for Python's json.loads.
func DecodeJSON(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("extra data after the JSON value")
	}
	return v, nil
}

// MarshalJSON encodes v with AppendJSON.
func MarshalJSON(v any) []byte { return AppendJSON(make([]byte, 0, 1024), v) }

// AppendJSON appends v's JSON: nil, bool, string, numbers, json.Number,
// bson.D (in its order), bson.A, []any, []string, []bson.D,
// map[string]any (keys sorted) and json.RawMessage.
func AppendJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case string:
		return AppendString(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	case json.Number:
		return appendNumber(b, x)
	case json.RawMessage:
		return append(b, x...)
	case bson.D:
		b = append(b, '{')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, e.Key)
			b = append(b, ':')
			b = AppendJSON(b, e.Value)
		}
		return append(b, '}')
	case bson.A:
		return appendList(b, []any(x))
	case []any:
		return appendList(b, x)
	case []string:
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, s)
		}
		return append(b, ']')
	case []bson.D:
		b = append(b, '[')
		for i, d := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSON(b, d)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := make(bson.D, len(keys))
		for i, k := range keys {
			d[i] = bson.E{Key: k, Value: x[k]}
		}
		return AppendJSON(b, d)
	}
	// Not a JSON value of the contract: encoding/json as a fallback.
	out, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, out...)
}

func appendList(b []byte, list []any) []byte {
	b = append(b, '[')
	for i, item := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSON(b, item)
	}
	return append(b, ']')
}

// appendNumber writes an integer as Python re-encodes it (-0 is 0).
func appendNumber(b []byte, n json.Number) []byte {
	if i, ok := new(big.Int).SetString(string(n), 10); ok {
		return i.Append(b, 10)
	}
	return append(b, n...)
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped as Python's json.dumps
// with ensure_ascii=False escapes it.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
