package common

import (
	"context"
	"io"
	"log"
	"net/http"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// ReadBody reads a request body under the contract's size limit, as
// services/common/http_body.py: an oversize body is read to its end (up to
// 16 x the limit) before the 413 goes out, so a keep-alive connection stays
// usable for the client's next request.
func (c *Contract) ReadBody(r *http.Request) ([]byte, error) {
	limit := int64(c.Limits.MaxRequestBytes)
	if r.ContentLength > limit {
		_, _ = io.CopyN(io.Discard, r.Body, min(r.ContentLength, 16*limit))
		return nil, c.CheckSize(int(r.ContentLength))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, Errorf(InvalidArgument, "reading the body: %v", err)
	}
	if int64(len(body)) > limit {
		_, _ = io.CopyN(io.Discard, r.Body, 15*limit)
		return nil, Errorf(ResourceExhausted, "request body exceeds the limit of %d bytes", limit)
	}
	return body, nil
}

// WriteJSON writes a compact JSON body (AppendJSON) with a status and a
// Content-Length (as gunicorn sends it; net/http would chunk bodies over
// 2 KiB, adding framing bytes the Python services do not send).
func WriteJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// HealthHandler answers GET /health: {"status":"ok"} when the database
// answers a ping, else the contract's error as {"error": {"code", "message"}}.
func HealthHandler(c *Contract, s *Store) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := s.Health(r.Context()); err != nil {
			e := AsError(err)
			WriteJSON(w, c.HTTPStatus(e.Code), MarshalJSON(bson.D{{Key: "error", Value: bson.D{
				{Key: "code", Value: e.Code}, {Key: "message", Value: e.Message}}}}))
			return
		}
		WriteJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
	}
}

// ServeHTTP serves handler on HOST:PORT with net/http until SIGTERM or
// SIGINT (a goroutine per connection; HTTP/1.1, and h2c where the handler
// offers it).
func ServeHTTP(handler http.Handler) {
	server := &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second}
	ctx, stop := Stopping()
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	if err := server.Serve(Listen()); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
