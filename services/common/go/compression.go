package common

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// Compression is the lab's compression axis as the service's environment sets
// it (lab/axes.py, axis `compression`): "gzip" with LAB_COMPRESSION=gzip, else
// "" (the service compresses nothing). Any other value stops the service.
func Compression() string {
	switch value := os.Getenv("LAB_COMPRESSION"); value {
	case "", "identity":
		return ""
	case "gzip":
		return value
	default:
		log.Fatalf("LAB_COMPRESSION=%q: expected identity or gzip", value)
		return ""
	}
}

// Compressed is handler answering in HTTP's gzip content coding when the
// service's environment says so (LAB_COMPRESSION=gzip) and the request asks for
// it (Accept-Encoding names gzip, at a q above 0); otherwise handler as it is.
// A buffered reply (WriteJSON) goes out compressed whole with its own
// Content-Length, as the uncompressed one does; a streamed one (the handler
// flushes: SSE) goes out chunked, the gzip stream flushed at each Flush so that
// every event reaches the client when it is written. An upgrade (WebSocket)
// and a reply without a body (HEAD, 204, 304) pass through untouched.
func Compressed(handler http.Handler) http.Handler {
	if Compression() == "" {
		return handler
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead || r.Header.Get("Upgrade") != "" || !AcceptsGzip(r.Header.Values("Accept-Encoding")) {
			handler.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Accept-Encoding")
		gw := &gzipWriter{ResponseWriter: w, status: http.StatusOK}
		defer gw.finish()
		handler.ServeHTTP(gw, r)
	})
}

// AcceptsGzip reads Accept-Encoding (RFC 9110, 12.5.3): gzip (or x-gzip) with
// a q-value above 0; else, gzip unnamed, "*" with a q-value above 0.
func AcceptsGzip(values []string) bool {
	named, wildcard := -1.0, -1.0
	for _, value := range values {
		for _, item := range strings.Split(value, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(item), ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if name != "gzip" && name != "x-gzip" && name != "*" {
				continue
			}
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				key, v, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(key), "q") {
					if parsed, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
						q = parsed
					}
				}
			}
			if name == "*" {
				wildcard = max(wildcard, q)
			} else {
				named = max(named, q)
			}
		}
	}
	if named >= 0 {
		return named > 0
	}
	return wildcard > 0
}

type gzipWriter struct {
	http.ResponseWriter
	status    int
	wrote     bool         // WriteHeader called by the handler
	buffer    bytes.Buffer // the body until the handler flushes or returns
	stream    *gzip.Writer // once streaming
	streaming bool
	passed    bool // a reply without a body: written as it is
}

func (g *gzipWriter) WriteHeader(status int) {
	if g.wrote {
		return
	}
	g.wrote, g.status = true, status
	if status == http.StatusNoContent || status == http.StatusNotModified || status < 200 {
		g.passed = true
		g.Header().Del("Vary")
		g.ResponseWriter.WriteHeader(status)
	}
}

func (g *gzipWriter) Write(p []byte) (int, error) {
	if !g.wrote {
		g.WriteHeader(http.StatusOK)
	}
	if g.passed {
		return g.ResponseWriter.Write(p)
	}
	if g.streaming {
		return g.stream.Write(p)
	}
	return g.buffer.Write(p)
}

// Flush turns the reply into a stream: headers out, then the gzip stream
// flushed (a sync flush: every byte written so far decodable) and the
// connection's own buffer with it.
func (g *gzipWriter) Flush() {
	if !g.wrote {
		g.WriteHeader(http.StatusOK)
	}
	if g.passed {
		if f, ok := g.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		return
	}
	if !g.streaming {
		g.streaming = true
		g.Header().Del("Content-Length")
		g.Header().Set("Content-Encoding", "gzip")
		g.ResponseWriter.WriteHeader(g.status)
		g.stream = gzip.NewWriter(g.ResponseWriter)
		_, _ = g.stream.Write(g.buffer.Bytes())
		g.buffer.Reset()
	}
	_ = g.stream.Flush()
	if f, ok := g.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack is the connection's own (net/http's), for a handler that takes it over.
func (g *gzipWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(g.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (g *gzipWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

func (g *gzipWriter) finish() {
	switch {
	case g.passed:
	case g.streaming:
		_ = g.stream.Close()
	case g.buffer.Len() == 0: // nothing to compress
		g.Header().Del("Vary")
		g.ResponseWriter.WriteHeader(g.status)
	default:
		var compressed bytes.Buffer
		zw := gzip.NewWriter(&compressed)
		_, _ = zw.Write(g.buffer.Bytes())
		_ = zw.Close()
		g.Header().Set("Content-Encoding", "gzip")
		g.Header().Set("Content-Length", strconv.Itoa(compressed.Len()))
		g.ResponseWriter.WriteHeader(g.status)
		_, _ = g.ResponseWriter.Write(compressed.Bytes())
	}
}
