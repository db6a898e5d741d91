// WebSocket with gorilla/websocket (contract/ws-protocol.md): one
// connection per client at /ws, JSON requests answered in order by the
// shared Go handler (services/common/go/ws.go), as
// services/ws/python_simple_websocket.
package main

import (
	"log"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	common "protolab/services/common/go"
)

const writeTimeout = 10 * time.Second

func main() {
	contract, store := common.Setup()
	defer store.Close()
	handler := &common.WSHandler{Contract: contract, Store: store}
	// Like the Python service, any origin may connect (the lab's clients and browsers).
	upgrader := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

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
		for {
			_, message, err := conn.ReadMessage()
			if err != nil {
				return
			}
			reply := handler.Handle(r.Context(), message)
			_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
			if err := conn.WriteMessage(websocket.TextMessage, reply); err != nil {
				log.Printf("writing a reply: %v", err)
				return
			}
		}
	})
	common.ServeHTTP(mux)
}
