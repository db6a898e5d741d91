package common

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
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
	if w.Header().Get("Content-Type") == "" { // else a media type the handler negotiated
		w.Header().Set("Content-Type", "application/json")
	}
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

// HTTPVersion is the HTTP version the lab asks the service for (LAB_HTTP;
// lab/axes.py, axis http): "h1" (unset: HTTP/1.1 as the service always ran),
// "h2" (HTTP/2 over TLS, chosen by ALPN: LAB_TLS must be set) or "h2c"
// (cleartext HTTP/2 with prior knowledge: LAB_TLS must not be). A bad setting
// ends the process, saying why.
func HTTPVersion() string {
	want := os.Getenv("LAB_HTTP")
	switch want {
	case "", "h1":
		return "h1"
	case "h2":
		if os.Getenv("LAB_TLS") == "" {
			log.Fatalf("LAB_HTTP=h2 is HTTP/2 over TLS, chosen by ALPN: LAB_TLS must be set")
		}
	case "h2c":
		if os.Getenv("LAB_TLS") != "" {
			log.Fatalf("LAB_HTTP=h2c is cleartext HTTP/2: LAB_TLS must be unset")
		}
	default:
		log.Fatalf("LAB_HTTP=%q: expected h1, h2 or h2c", want)
	}
	return want
}

// ServeHTTP serves handler on HOST:PORT with net/http until SIGTERM or
// SIGINT (a goroutine per connection, and per stream over HTTP/2). HTTP/1.1
// alone by default, in cleartext or over TLS (ALPN "http/1.1"); HTTP/2 when the
// lab asks for it (HTTPVersion): over TLS ("h2") net/http's own HTTP/2 by
// ALPN, offering "h2" and "http/1.1"; in cleartext ("h2c") http.Server's
// Protocols (Go 1.24) with unencrypted HTTP/2 (prior knowledge, RFC 9113 3.3)
// beside HTTP/1.1 on the same port.
func ServeHTTP(handler http.Handler) {
	switch HTTPVersion() {
	case "h2":
		serve(handler, nil, "h2", "http/1.1")
	case "h2c":
		protocols := new(http.Protocols)
		protocols.SetHTTP1(true)
		protocols.SetUnencryptedHTTP2(true)
		serve(handler, protocols)
	default:
		serve(handler, nil, "http/1.1")
	}
}

// ServeHTTPAndH2 serves handler as ServeHTTP, and HTTP/2 besides whatever
// LAB_HTTP says (a push service's feeds over both): cleartext HTTP/2 (h2c,
// prior knowledge or Upgrade) on a cleartext port, HTTP/2 by ALPN ("h2") over TLS.
func ServeHTTPAndH2(handler http.Handler) {
	HTTPVersion() // checked: h2 and h2c need TLS set or unset as for ServeHTTP
	if TLSConfig() == nil {
		handler = h2c.NewHandler(handler, &http2.Server{})
	}
	serve(handler, nil, "h2", "http/1.1")
}

// serve runs the server: `protocols` as http.Server takes them (nil: its
// default), `alpn` the protocols a TLS listener offers.
func serve(handler http.Handler, protocols *http.Protocols, alpn ...string) {
	server := &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second, Protocols: protocols}
	if TLSConfig() != nil && !slices.Contains(alpn, "h2") {
		// net/http takes "h2" from ALPN on its own unless told it serves nothing of HTTP/2
		server.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	ctx, stop := Stopping()
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	if err := server.Serve(Listen(alpn...)); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
