// Server-Sent Events with net/http (contract/push.md): GET /events streams
// a feed (`changes` or `synthetic`) as text/event-stream, over HTTP/1.1 and
// cleartext HTTP/2 (h2c, golang.org/x/net/http2/h2c) on one port; over TLS
// (the tls variants) HTTP/1.1 and HTTP/2 by ALPN.
package main

import (
	"log"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	common "protolab/services/common/go"
)

type service struct {
	contract *common.Contract
	push     *common.Push
	store    *common.Store
}

func main() {
	contract, store := common.Setup()
	defer store.Close()
	push, err := common.LoadPush()
	if err != nil {
		log.Fatal(err)
	}
	s := &service{contract: contract, push: push, store: store}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", common.HealthHandler(contract, store))
	mux.HandleFunc("GET "+push.SSEPath, s.events) // GET patterns take HEAD too
	mux.HandleFunc("/", s.unrouted)
	common.ServeHTTPAndH2(common.Compressed(mux))
}

func (s *service) fail(w http.ResponseWriter, err error) {
	e := common.AsError(err)
	s.failWith(w, s.contract.HTTPStatus(e.Code), e.Code, e.Message)
}

func (s *service) failWith(w http.ResponseWriter, status int, code, message string) {
	common.WriteJSON(w, status, common.MarshalJSON(bson.D{{Key: "error", Value: bson.D{
		{Key: "code", Value: code}, {Key: "message", Value: message}}}}))
}

func (s *service) unrouted(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == s.push.SSEPath || r.URL.Path == "/health" {
		w.Header().Set("Allow", "GET, HEAD")
		s.failWith(w, http.StatusMethodNotAllowed, s.contract.CodeOfHTTPStatus(http.StatusMethodNotAllowed),
			"The method is not allowed for the requested URL.")
		return
	}
	s.failWith(w, http.StatusNotFound, common.NotFound, "The requested URL was not found on the server.")
}

func (s *service) events(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query()
	params := map[string]any{}
	for key, values := range query {
		if len(values) != 1 {
			s.fail(w, common.Errorf(common.InvalidArgument, "query parameter '%s' given %d times", key, len(values)))
			return
		}
		if key != "feed" {
			params[key] = values[0]
		}
	}
	var lastEventID *string
	if values, present := r.Header["Last-Event-Id"]; present && len(values) > 0 {
		lastEventID = &values[0]
	}
	var feed any
	if values, present := query["feed"]; present {
		feed = values[0]
	}
	sub, err := s.push.Subscribe(feed, params, lastEventID)
	if err != nil {
		s.fail(w, err)
		return
	}
	ctx := r.Context()
	stream, err := sub.Open(ctx, s.store)
	if err != nil {
		s.fail(w, err)
		return
	}
	defer stream.Close()
	flusher, _ := w.(http.Flusher)
	header := w.Header()
	header.Set("Content-Type", "text/event-stream")
	header.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}

	// One writer at a time: the feed and the keep-alive ticker.
	var mu sync.Mutex
	last := time.Now()
	write := func(chunk []byte) error {
		mu.Lock()
		defer mu.Unlock()
		last = time.Now()
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	if write([]byte(": subscribed "+sub.Feed+"\n\n")) != nil {
		return
	}
	keepalive := time.Duration(s.push.KeepaliveSecs) * time.Second
	done := make(chan struct{})
	defer close(done)
	go func() {
		ticker := time.NewTicker(keepalive / 3)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-ticker.C:
				mu.Lock()
				silent := time.Since(last) >= keepalive
				mu.Unlock()
				if silent {
					_ = write([]byte(":\n\n"))
				}
			}
		}
	}()

	buf := make([]byte, 0, 4096)
	sent, ended, err := stream.Run(ctx, func(id string, data []byte) error {
		buf = append(buf[:0], "id: "...)
		buf = append(buf, id...)
		buf = append(buf, "\nevent: "...)
		buf = append(buf, sub.Feed...)
		buf = append(buf, "\ndata: "...)
		buf = append(buf, data...)
		buf = append(buf, "\n\n"...)
		return write(buf)
	})
	switch {
	case ended:
		_ = write([]byte("event: end\ndata: " + string(common.EndData(sent)) + "\n\n"))
	case err != nil && ctx.Err() == nil:
		if e := common.AsError(err); e.Code != common.Internal || !strings.Contains(e.Message, "write") {
			_ = write([]byte("event: error\ndata: " + string(common.ErrorData(err)) + "\n\n"))
		}
	}
}
