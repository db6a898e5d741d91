// WebSocket with gorilla/websocket (contract/ws-protocol.md): one
// connection per client at /ws, JSON requests answered in order by the
// shared Go handler (services/common/go/ws.go), as
// services/ws/python_simple_websocket.
package main

import (
	"context"
	"log"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	common "protolab/services/common/go"
)

const writeTimeout = 10 * time.Second

func main() {
	contract, store := common.Setup()
	defer store.Close()
	push, err := common.LoadPush()
	if err != nil {
		log.Printf("no push feeds: %v", err)
	}
	handler := &common.WSHandler{Contract: contract, Store: store, Push: push}
	// Like the Python service, any origin may connect (the lab's clients and browsers).
	// LAB_COMPRESSION=gzip (lab/axes.py, axis `compression`): permessage-deflate
	// when the client's handshake offers it (gorilla: no context takeover, every
	// message written compressed).
	upgrader := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true },
		EnableCompression: common.Compression() == "gzip"}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", common.HealthHandler(contract, store))
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		conn, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return // the upgrader answered the HTTP error
		}
		defer conn.Close()
		// A message over max_frame_bytes closes the connection with 1009
		// (gorilla's read limit); below it, max_request_bytes is enforced
		// per message with an error reply, keeping the connection.
		conn.SetReadLimit(int64(contract.Limits.MaxFrameBytes))
		sender := &sender{conn: conn}
		session := handler.Open(sender)
		defer session.Close()
		for {
			_, message, err := conn.ReadMessage()
			if err != nil {
				return
			}
			reply, after := session.Handle(r.Context(), message)
			if err := sender.Send(r.Context(), reply); err != nil {
				return
			}
			if after != nil {
				after()
			}
		}
	})
	common.ServeHTTP(mux)
}

// sender writes whole messages, one at a time (gorilla allows one
// concurrent writer: replies, pushes and broadcasts share the connection).
type sender struct {
	mu   sync.Mutex
	conn *websocket.Conn
}

func (s *sender) Send(ctx context.Context, message []byte) error {
	if err := ctx.Err(); err != nil {
		return err // as common.WSConn asks: a cancelled ctx starts no write
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	deadline := time.Now().Add(writeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = s.conn.SetWriteDeadline(deadline)
	return s.conn.WriteMessage(websocket.TextMessage, message)
}
