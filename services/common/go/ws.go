package common

import (
	"context"
	"encoding/json"
	"log"
	"sort"
	"strings"
	"sync"
)

// The WebSocket message protocol (contract/ws-protocol.md), the same for
// every Go WebSocket library: one JSON request in, exactly one reply out,
// carrying the request's request_id; a bad request gets an error reply and
// the connection stays open.

// WSOperations are the ops and their parameters.
var WSOperations = map[string][]string{
	"create": {"game"},
	"get":    {"id"},
	"list":   {"limit", "offset"},
	"update": {"id", "game"},
	"delete": {"id"},
	"health": {},
	// Echo and broadcast (Fernando & Engel), push subscriptions (push.md).
	"echo":        {"payload"},
	"broadcast":   {"payload"},
	"subscribe":   {"feed", "batch", "rate", "count", "last_event_id"},
	"unsubscribe": {"feed"},
}

var wsOptional = map[string]bool{"limit": true, "offset": true, "batch": true, "rate": true, "count": true,
	"last_event_id": true}

// WSHandler answers WebSocket requests from the store; it knows every open
// connection of the process (broadcast reaches them all).
type WSHandler struct {
	Contract *Contract
	Store    *Store
	Push     *Push // nil: no push section in the contract, subscribe is refused

	mu       sync.RWMutex
	sessions map[*WSSession]struct{}
}

// Handle answers one message (a text or binary frame's payload); after,
// when not nil, is to be called once the reply is written (it starts a
// subscription's feed, whose messages must follow the reply).
func (s *WSSession) Handle(ctx context.Context, message []byte) (reply []byte, after func()) {
	var requestID any
	result, err := s.handle(ctx, message, &requestID, &after)
	return s.h.reply(requestID, result, err), after
}

func (h *WSHandler) reply(requestID, result any, err error) []byte {
	reply := make([]byte, 0, 512)
	reply = append(reply, `{"request_id":`...)
	reply = AppendJSON(reply, requestID)
	if err != nil {
		e := AsError(err)
		if e.Code == Internal {
			log.Printf("request failed: %v", err)
		}
		reply = append(reply, `,"error":{"code":`...)
		reply = AppendString(reply, e.Code)
		reply = append(reply, `,"message":`...)
		reply = AppendString(reply, e.Message)
		return append(reply, "}}"...)
	}
	reply = append(reply, `,"result":`...)
	reply = AppendJSON(reply, result)
	return append(reply, '}')
}

func (s *WSSession) handle(ctx context.Context, message []byte, requestID *any, after *func()) (any, error) {
	h := s.h
	decoded, err := DecodeJSON(message)
	if err != nil {
		return nil, Errorf(InvalidArgument, "malformed JSON message: %v", err)
	}
	request, ok := decoded.(map[string]any)
	if !ok {
		return nil, Errorf(InvalidArgument, "a request must be a JSON object")
	}
	switch id := request["request_id"].(type) {
	case string:
		*requestID = id
	case json.Number:
		if _, isInt := Integer(id); isInt {
			*requestID = id
			break
		}
		return nil, Errorf(InvalidArgument, "request_id must be an integer or a string")
	default:
		return nil, Errorf(InvalidArgument, "request_id must be an integer or a string")
	}
	// Checked after parsing (frames are capped at max_frame_bytes), so the
	// error reply can name the request it answers.
	if err := h.Contract.CheckSize(len(message)); err != nil {
		return nil, err
	}
	if name := firstUnknown(request, []string{"request_id", "op", "params"}); name != "" {
		return nil, Errorf(InvalidArgument, "unknown request member %s", pyRepr(name))
	}
	op, _ := request["op"].(string)
	names, known := WSOperations[op]
	if !known {
		ops := make([]string, 0, len(WSOperations))
		for name := range WSOperations {
			ops = append(ops, "'"+name+"'")
		}
		sort.Strings(ops)
		return nil, Errorf(InvalidArgument, "unknown op %s: expected one of [%s]", pyRepr(request["op"]), strings.Join(ops, ", "))
	}
	params := map[string]any{}
	if raw, present := request["params"]; present {
		if params, ok = raw.(map[string]any); !ok {
			return nil, Errorf(InvalidArgument, "params must be an object")
		}
	}
	if name := firstUnknown(params, names); name != "" {
		return nil, Errorf(InvalidArgument, "unknown parameter %s for %s", pyRepr(name), op)
	}
	for _, name := range names {
		if _, present := params[name]; !present && !wsOptional[name] {
			return nil, Errorf(InvalidArgument, "missing parameter %s for %s", pyRepr(name), op)
		}
	}
	switch op {
	case "create":
		return h.Store.Create(ctx, params["game"])
	case "get":
		return h.Store.Get(ctx, params["id"])
	case "list":
		limit, err := h.pageArg(params, "limit", int64(h.Contract.Limits.DefaultListLimit))
		if err != nil {
			return nil, err
		}
		offset, err := h.pageArg(params, "offset", 0)
		if err != nil {
			return nil, err
		}
		return h.Store.List(ctx, limit, offset)
	case "update":
		return h.Store.Update(ctx, params["id"], params["game"])
	case "delete":
		return nil, h.Store.Delete(ctx, params["id"])
	case "echo":
		return rawPayload(message)
	case "broadcast":
		payload, err := rawPayload(message)
		if err != nil {
			return nil, err
		}
		return s.broadcast(payload), nil
	case "subscribe":
		return s.subscribe(ctx, params, after)
	case "unsubscribe":
		return nil, s.unsubscribe(params["feed"])
	default: // health
		return nil, h.Store.Health(ctx)
	}
}

// pageArg is an integer parameter of list (JSON integers only: 10.0 is not one).
func (h *WSHandler) pageArg(params map[string]any, name string, def int64) (int64, error) {
	raw, present := params[name]
	if !present {
		return def, nil
	}
	n, ok := Integer(raw)
	if !ok {
		bound := h.Contract.Limits.MaxListLimit
		if name == "offset" {
			return 0, Errorf(InvalidArgument, "invalid offset %s: expected an integer 0..%d", pyRepr(raw), h.Contract.Limits.MaxOffset)
		}
		return 0, Errorf(InvalidArgument, "invalid limit %s: expected an integer 1..%d", pyRepr(raw), bound)
	}
	return n, nil
}

// firstUnknown is the first (sorted) key of obj not in names.
func firstUnknown(obj map[string]any, names []string) string {
	var unknown []string
	for key := range obj {
		found := false
		for _, name := range names {
			if key == name {
				found = true
				break
			}
		}
		if !found {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) == 0 {
		return ""
	}
	sort.Strings(unknown)
	return unknown[0]
}
