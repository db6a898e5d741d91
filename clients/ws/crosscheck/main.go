// The WebSocket cross-check client: gorilla/websocket, one connection, the
// lab client's message as one text frame (contract/ws-protocol.md). A call
// is a success when the reply carries the request's id and a result, not an
// error; push messages that arrive meanwhile are skipped, as the lab's client
// sets them aside.
package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/gorilla/websocket"

	"protolab/clients/internal/crosscheck"
)

// Request is a WebSocket plan's request: the message text, sent as it is on
// every call (so with the same request_id: one call at a time, its reply is
// the next one carrying that id).
type Request struct {
	Message   string `json:"message"`
	RequestID any    `json:"request_id"`
}

func main() {
	crosscheck.Main("gorilla/websocket", crosscheck.ModuleVersion("github.com/gorilla/websocket"), connect)
}

func connect(plan crosscheck.Plan) (*crosscheck.Client, error) {
	var req Request
	if err := json.Unmarshal(plan.Request, &req); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	timeout := plan.Timeout()
	dialer := websocket.Dialer{HandshakeTimeout: timeout} // no proxy: loopback
	conn, _, err := dialer.Dial(plan.Endpoint, nil)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(64 << 20)
	message := []byte(req.Message)
	call := func() error {
		deadline := time.Now().Add(timeout)
		conn.SetWriteDeadline(deadline)
		if err := conn.WriteMessage(websocket.TextMessage, message); err != nil {
			return err
		}
		conn.SetReadDeadline(deadline)
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				return err
			}
			var r map[string]any // decoded whole, as the lab's client decodes its replies
			if err := json.Unmarshal(data, &r); err != nil {
				return crosscheck.Fail("undecodable reply", "%v", err)
			}
			id, hasID := r["request_id"]
			if _, push := r["event"]; push && !hasID {
				continue // a push message, not this call's reply
			}
			if id != req.RequestID {
				return crosscheck.Fail("wrong request_id", "got %v, want %v", id, req.RequestID)
			}
			if e, failed := r["error"].(map[string]any); failed {
				return crosscheck.Fail(fmt.Sprintf("error %v", e["code"]), "%v", e["message"])
			}
			if _, ok := r["result"]; !ok {
				return crosscheck.Fail("no result", "%.200s", data)
			}
			return nil
		}
	}
	return &crosscheck.Client{Call: call, Sent: message, Close: func() { conn.Close() }}, nil
}
