// Package pbgame is the contract's Game as the generated protobuf message
// (contract/games.proto) and back, for the services that speak protobuf over
// the shared store (the Connect service; the gRPC service keeps its own copy
// in its main package). Apart from package common, so that the services that
// speak no protobuf do not link the generated code.
package pbgame

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	common "protolab/services/common/go"
	pb "protolab/services/common/go/gamespb"
)

// StoredGame is a stored game decoded straight into the generated message (its
// json tags are the stored keys; the store's typed collection reads them).
type StoredGame struct {
	ID       string `bson:"_id"`
	*pb.Game `bson:",inline"`
}

// Message is the stored game as a Game message, its id set.
func (g StoredGame) Message() *pb.Game {
	g.Game.Id = g.ID
	return g.Game
}

// UnknownField finds a field number the schema does not know, in the message
// or any nested one (a mistyped field lands among the unknown ones too).
func UnknownField(m protoreflect.Message) (protoreflect.FieldNumber, bool) {
	if raw := m.GetUnknown(); len(raw) > 0 {
		number, _, _ := protowire.ConsumeTag(raw)
		return number, true
	}
	var number protoreflect.FieldNumber
	found := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil {
			return true
		}
		if fd.IsList() {
			for i := 0; i < v.List().Len() && !found; i++ {
				number, found = UnknownField(v.List().Get(i).Message())
			}
		} else {
			number, found = UnknownField(v.Message())
		}
		return !found
	})
	return number, found
}

// GameOf is a message's game fields (no id) as the JSON values the store
// validates, by the contract's field table (contract/grpc_codec.py).
func GameOf(c *common.Contract, m *pb.Game) map[string]any {
	r := m.ProtoReflect()
	fields := r.Descriptor().Fields()
	game := make(map[string]any, len(c.Fields))
	for _, f := range c.Fields {
		fd := fields.ByName(protoreflect.Name(f.Name))
		if fd == nil {
			continue // the store reports it missing
		}
		switch f.Kind {
		case common.KindNullableBool:
			if r.Has(fd) {
				game[f.Name] = r.Get(fd).Bool()
			} else {
				game[f.Name] = nil
			}
		case common.KindStringList:
			list := r.Get(fd).List()
			items := make([]any, list.Len())
			for i := range items {
				items[i] = list.Get(i).String()
			}
			game[f.Name] = items
		case common.KindLanguageDetails:
			list := r.Get(fd).List()
			items := make([]any, list.Len())
			for i := range items {
				detail := list.Get(i).Message()
				dfields := detail.Descriptor().Fields()
				obj := make(map[string]any, len(c.DetailFields))
				for _, df := range c.DetailFields {
					if dfd := dfields.ByName(protoreflect.Name(df.Name)); dfd != nil {
						obj[df.Name] = detail.Get(dfd).Interface()
					}
				}
				items[i] = obj
			}
			game[f.Name] = items
		default: // string, bool
			game[f.Name] = r.Get(fd).Interface()
		}
	}
	return game
}

// GameMessage is a stored game (as the store returns it) as a Game message.
func GameMessage(doc bson.D) *pb.Game {
	m := &pb.Game{}
	setFields(m.ProtoReflect(), doc)
	return m
}

func setFields(r protoreflect.Message, doc bson.D) {
	fields := r.Descriptor().Fields()
	for _, e := range doc {
		fd := fields.ByName(protoreflect.Name(e.Key))
		if fd == nil || e.Value == nil {
			continue
		}
		switch v := e.Value.(type) {
		case string:
			r.Set(fd, protoreflect.ValueOfString(v))
		case bool:
			r.Set(fd, protoreflect.ValueOfBool(v))
		case bson.A:
			list := r.Mutable(fd).List()
			for _, item := range v {
				switch x := item.(type) {
				case string:
					list.Append(protoreflect.ValueOfString(x))
				case bson.D:
					element := list.NewElement()
					setFields(element.Message(), x)
					list.Append(element)
				}
			}
		}
	}
}
