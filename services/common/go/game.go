package common

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Validation as contract/game.py: every field present, exact JSON types, no
// unknown field, nested language_details objects checked the same way. The
// values are those of DecodeJSON (string, bool, nil, json.Number, []any,
// map[string]any). Nothing from a request reaches MongoDB unchecked, so a
// query operator such as {"$ne": null} never does.

// CheckID returns the id if it is a string matching the contract's pattern.
func (c *Contract) CheckID(id any) (string, error) {
	s, ok := id.(string)
	if !ok || !c.IDPattern.MatchString(s) {
		return "", Errorf(InvalidArgument, "invalid id %s: expected 1-12 digits or 24 hex digits", pyRepr(id))
	}
	return s, nil
}

// CheckPage checks a list page's limit and offset.
func (c *Contract) CheckPage(limit, offset int64) error {
	if limit < 1 || limit > int64(c.Limits.MaxListLimit) {
		return Errorf(InvalidArgument, "invalid limit %d: expected an integer 1..%d", limit, c.Limits.MaxListLimit)
	}
	if offset < 0 || offset > int64(c.Limits.MaxOffset) {
		return Errorf(InvalidArgument, "invalid offset %d: expected an integer 0..%d", offset, c.Limits.MaxOffset)
	}
	return nil
}

// CheckSize refuses a request over max_request_bytes.
func (c *Contract) CheckSize(size int) error {
	if size > c.Limits.MaxRequestBytes {
		return Errorf(ResourceExhausted, "request of %d bytes exceeds the limit of %d", size, c.Limits.MaxRequestBytes)
	}
	return nil
}

// CheckURISize refuses an HTTP request target (path and query) over max_uri_bytes.
func (c *Contract) CheckURISize(size int) error {
	if c.Limits.MaxURIBytes > 0 && size > c.Limits.MaxURIBytes {
		return Errorf(ResourceExhausted, "request target of %d bytes exceeds the limit of %d", size, c.Limits.MaxURIBytes)
	}
	return nil
}

// CheckResponseSize refuses an answer over max_response_bytes (a page of
// large games: the caller asks for fewer).
func (c *Contract) CheckResponseSize(size int) error {
	if c.Limits.MaxResponseBytes > 0 && size > c.Limits.MaxResponseBytes {
		return Errorf(ResourceExhausted, "the answer would be %d bytes, over the limit of %d: ask for fewer games",
			size, c.Limits.MaxResponseBytes)
	}
	return nil
}

// Integer is a JSON value as an integer when it is one (a number token with
// no fraction or exponent; values beyond int64 are clamped, so they fail any
// range check). Python's type(v) is int, for JSON.
func Integer(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(n), ".eE") {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil { // out of range
		if strings.HasPrefix(string(n), "-") {
			return -1 << 63, true
		}
		return 1<<63 - 1, true
	}
	return i, true
}

// CheckGame returns the game's fields in contract order as a BSON document
// (nested language details as documents in contract order), or INVALID_ARGUMENT.
func (c *Contract) CheckGame(game any) (bson.D, error) {
	return c.checkObject("", c.Fields, c.fieldKind, game)
}

func (c *Contract) checkObject(path string, fields []Field, kind map[string]string, value any) (bson.D, error) {
	where := path
	if where == "" {
		where = "game"
	}
	obj, ok := value.(map[string]any)
	if !ok {
		return nil, Errorf(InvalidArgument, "%s must be an object, got %s", where, pyType(value))
	}
	for key := range obj {
		if _, known := kind[key]; !known {
			return nil, Errorf(InvalidArgument, "unknown field %s in %s", pyRepr(key), where)
		}
	}
	for _, f := range fields {
		if _, present := obj[f.Name]; !present {
			return nil, Errorf(InvalidArgument, "missing field %s in %s", pyRepr(f.Name), where)
		}
	}
	doc := make(bson.D, 0, len(fields))
	for _, f := range fields {
		name := f.Name
		if path != "" {
			name = path + "." + f.Name
		}
		v, err := c.checkValue(name, f.Kind, obj[f.Name])
		if err != nil {
			return nil, err
		}
		doc = append(doc, bson.E{Key: f.Name, Value: v})
	}
	return doc, nil
}

func (c *Contract) checkValue(path, kind string, value any) (any, error) {
	wrong := func() error {
		return Errorf(InvalidArgument, "field %s must be a %s, got %s", pyRepr(path), kind, pyType(value))
	}
	switch kind {
	case KindString:
		if s, ok := value.(string); ok {
			return s, nil
		}
	case KindBool:
		if b, ok := value.(bool); ok {
			return b, nil
		}
	case KindNullableBool:
		if value == nil {
			return nil, nil
		}
		if b, ok := value.(bool); ok {
			return b, nil
		}
	case KindStringList:
		if list, ok := value.([]any); ok {
			out := make(bson.A, len(list))
			for i, item := range list {
				s, ok := item.(string)
				if !ok {
					return nil, wrong()
				}
				out[i] = s
			}
			return out, nil
		}
	case KindLanguageDetails:
		if list, ok := value.([]any); ok {
			out := make(bson.A, len(list))
			for i, item := range list {
				d, err := c.checkObject(fmt.Sprintf("%s[%d]", path, i), c.DetailFields, c.detailKind, item)
				if err != nil {
					return nil, err
				}
				out[i] = d
			}
			return out, nil
		}
	}
	return nil, wrong()
}

// pyType names a JSON value's type as Python does, so messages read alike.
func pyType(v any) string {
	switch n := v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case string:
		return "str"
	case json.Number:
		if _, ok := Integer(n); ok {
			return "int"
		}
		return "float"
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

// pyRepr renders a value roughly as Python's repr does in the Python messages.
func pyRepr(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + strings.ReplaceAll(strings.ReplaceAll(x, `\`, `\\`), "'", `\'`) + "'"
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case json.Number:
		return string(x)
	}
	return string(AppendJSON(nil, v))
}
