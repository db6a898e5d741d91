// Package codec holds the strict codecs of the lab's connect-go services (the
// Games service and its conformance server): what connect-go's own codecs let
// through and the contract refuses is an error, which connect-go answers as
// INVALID_ARGUMENT ("unmarshal message").
package codec

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"protolab/services/common/go/pbgame"
)

// Proto is protobuf's binary codec refusing what grpc-go's strict decoder in
// services/grpc/go_grpc refuses: bytes that do not parse, and unknown or
// mistyped fields (connect-go's own keeps them as unknown fields).
type Proto struct{}

func (Proto) Name() string { return "proto" }

func (Proto) Marshal(m any) ([]byte, error) {
	message, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%T is not a protobuf message", m)
	}
	return proto.Marshal(message)
}

func (Proto) Unmarshal(data []byte, m any) error {
	message, ok := m.(proto.Message)
	if !ok {
		return fmt.Errorf("%T is not a protobuf message", m)
	}
	if err := proto.Unmarshal(data, message); err != nil {
		return err
	}
	if number, found := pbgame.UnknownField(message.ProtoReflect()); found {
		return fmt.Errorf("unknown or mistyped field number %d in %s", number, message.ProtoReflect().Descriptor().Name())
	}
	return nil
}

// JSON is protobuf's JSON mapping (protojson) refusing unknown fields
// (connect-go's own discards them), under `name`: "json", and "json;
// charset=utf-8", the media type's other spelling connect-go registers.
type JSON struct{ Spelling string }

func (c JSON) Name() string { return c.Spelling }

func (JSON) Marshal(m any) ([]byte, error) {
	message, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%T is not a protobuf message", m)
	}
	return protojson.MarshalOptions{}.Marshal(message)
}

func (JSON) Unmarshal(data []byte, m any) error {
	message, ok := m.(proto.Message)
	if !ok {
		return fmt.Errorf("%T is not a protobuf message", m)
	}
	if len(data) == 0 { // an empty body or a GET without a message: the empty message, as connect-go's own
		return nil
	}
	return protojson.UnmarshalOptions{}.Unmarshal(data, message)
}
