// Package common is the Go side of the lab's shared service code: the
// contract read as data from contract/contract.json (fields, types, id
// pattern, limits, error table), strict validation identical to
// contract/game.py, the MongoDB store of services/common/store.py, and the
// compact JSON encoding of contract/codec.py.
package common

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
)

// Field kinds, as contract.json names them.
const (
	KindString          = "string"
	KindStringList      = "list of string"
	KindBool            = "bool"
	KindNullableBool    = "bool or null"
	KindLanguageDetails = "list of language detail"
)

// Field is one entry of an ordered field table.
type Field struct {
	Name string
	Kind string
}

// Limits are the contract's limits.
type Limits struct {
	MaxRequestBytes  int `json:"max_request_bytes"`
	MaxListLimit     int `json:"max_list_limit"`
	DefaultListLimit int `json:"default_list_limit"`
	MaxOffset        int `json:"max_offset"`
	MaxFrameBytes    int `json:"max_frame_bytes"`
	MaxResponseBytes int `json:"max_response_bytes"`
	MaxURIBytes      int `json:"max_uri_bytes"`
}

// ErrorRow is one row of the error table: the code's spelling per protocol.
type ErrorRow struct {
	HTTP    int    `json:"http"`
	GRPC    string `json:"grpc"`
	Connect string `json:"connect"`
	Meaning string `json:"meaning"`
}

// Contract is contract/contract.json, with the field tables in file order.
type Contract struct {
	Fields       []Field
	DetailFields []Field
	IDPattern    *regexp.Regexp
	Limits       Limits
	Errors       map[string]ErrorRow

	fieldKind  map[string]string
	detailKind map[string]string
}

// LoadContract reads the contract from the file named by LAB_CONTRACT
// (default contract/contract.json, relative to the working directory).
func LoadContract() (*Contract, error) {
	path := os.Getenv("LAB_CONTRACT")
	if path == "" {
		path = "contract/contract.json"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the contract (LAB_CONTRACT): %w", err)
	}
	return ParseContract(data)
}

// ParseContract parses contract.json's text.
func ParseContract(data []byte) (*Contract, error) {
	var raw struct {
		Fields       json.RawMessage     `json:"fields"`
		DetailFields json.RawMessage     `json:"language_detail_fields"`
		IDPattern    string              `json:"id_pattern"`
		Limits       Limits              `json:"limits"`
		Errors       map[string]ErrorRow `json:"errors"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("contract.json: %w", err)
	}
	c := &Contract{Limits: raw.Limits, Errors: raw.Errors}
	var err error
	if c.Fields, err = orderedTable(raw.Fields); err != nil {
		return nil, fmt.Errorf("contract.json fields: %w", err)
	}
	if c.DetailFields, err = orderedTable(raw.DetailFields); err != nil {
		return nil, fmt.Errorf("contract.json language_detail_fields: %w", err)
	}
	if c.IDPattern, err = regexp.Compile(raw.IDPattern); err != nil {
		return nil, fmt.Errorf("contract.json id_pattern: %w", err)
	}
	for _, code := range []string{NotFound, InvalidArgument, ResourceExhausted, Unavailable, DeadlineExceeded, Internal} {
		if _, ok := c.Errors[code]; !ok {
			return nil, fmt.Errorf("contract.json: error table lacks %s", code)
		}
	}
	c.fieldKind = kinds(c.Fields)
	c.detailKind = kinds(c.DetailFields)
	return c, nil
}

// orderedTable reads a JSON object of name -> kind keeping its key order.
func orderedTable(data json.RawMessage) ([]Field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("expected an object")
	}
	var fields []Field
	for dec.More() {
		name, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var kind string
		if err := dec.Decode(&kind); err != nil {
			return nil, err
		}
		switch kind {
		case KindString, KindStringList, KindBool, KindNullableBool, KindLanguageDetails:
		default:
			return nil, fmt.Errorf("unknown kind %q of %v", kind, name)
		}
		fields = append(fields, Field{Name: name.(string), Kind: kind})
	}
	return fields, nil
}

func kinds(fields []Field) map[string]string {
	m := make(map[string]string, len(fields))
	for _, f := range fields {
		m[f.Name] = f.Kind
	}
	return m
}
