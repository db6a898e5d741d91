// WebSocket with coder/websocket (contract/ws-protocol.md): one connection
// per client at /ws, JSON requests answered in order by the shared Go
// handler (services/common/go/ws.go), as services/ws/python_simple_websocket.
package main

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/coder/websocket"

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

	// LAB_COMPRESSION=gzip (lab/axes.py, axis `compression`): permessage-deflate
	// when the client's handshake offers it, with context takeover (messages over
	// the library's threshold, 128 bytes, compressed); otherwise none offered.
	compression := websocket.CompressionDisabled
	if common.Compression() == "gzip" {
		compression = websocket.CompressionContextTakeover
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", common.HealthHandler(contract, store))
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		// Like the Python service, any origin may connect (the lab's clients and browsers).
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true,
			CompressionMode: compression})
		if err != nil {
			return // Accept answered the HTTP error
		}
		defer conn.CloseNow()
		// A message over max_frame_bytes closes the connection with 1009
		// (the library's read limit, 32 KiB by default); below it,
		// max_request_bytes is enforced per message with an error reply.
		conn.SetReadLimit(int64(contract.Limits.MaxFrameBytes))
		ctx := r.Context()
		sender := sender{conn: conn}
		session := handler.Open(sender)
		defer session.Close()
		for {
			_, message, err := conn.Read(ctx)
			if err != nil {
				return
			}
			reply, after := session.Handle(ctx, message)
			if err := sender.Send(ctx, reply); err != nil {
				return
			}
			if after != nil {
				after()
			}
		}
	})
	common.ServeHTTP(mux)
}

// sender writes whole messages; coder/websocket's Write is safe for
// concurrent use (replies, pushes and broadcasts share the connection).
type sender struct{ conn *websocket.Conn }

// As common.WSConn asks: coder/websocket closes the connection when a write's
// context ends mid-write, so the write keeps ctx's deadline but not its
// cancellation (an unsubscribe racing a push ended the connection: 1005).
func (s sender) Send(ctx context.Context, message []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	deadline := time.Now().Add(writeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	write, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	return s.conn.Write(write, websocket.MessageText, message)
}
