package common

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

func TestAcceptsGzipReadsQValues(t *testing.T) {
	cases := map[string]bool{
		"gzip": true, "gzip, deflate": true, "deflate": false, "": false, "identity": false,
		"GZIP;q=0.5": true, "gzip;q=0": false, "*": true, "*;q=0": false,
		"gzip;q=0, *": false, "br, *;q=0.1": true, "x-gzip": true,
	}
	for header, want := range cases {
		if got := AcceptsGzip([]string{header}); got != want {
			t.Errorf("AcceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

func gunzip(t *testing.T, body []byte) string {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestCompressedRepliesOnlyWhenAsked(t *testing.T) {
	t.Setenv("LAB_COMPRESSION", "gzip")
	body := bytes.Repeat([]byte(`{"name":"a game"}`), 100)
	handler := Compressed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, body)
	}))
	asked := httptest.NewRequest("GET", "/games", nil)
	asked.Header.Set("Accept-Encoding", "gzip")
	got := httptest.NewRecorder()
	handler.ServeHTTP(got, asked)
	if got.Header().Get("Content-Encoding") != "gzip" || got.Header().Get("Content-Length") != strconv.Itoa(got.Body.Len()) {
		t.Fatalf("headers %v for %d bytes", got.Header(), got.Body.Len())
	}
	if gunzip(t, got.Body.Bytes()) != string(body) {
		t.Fatal("the body does not decode to the reply")
	}
	plain := httptest.NewRecorder()
	handler.ServeHTTP(plain, httptest.NewRequest("GET", "/games", nil))
	if plain.Header().Get("Content-Encoding") != "" || plain.Body.String() != string(body) {
		t.Fatalf("unasked: headers %v", plain.Header())
	}
}

func TestCompressedStreamFlushesPerWrite(t *testing.T) {
	t.Setenv("LAB_COMPRESSION", "gzip")
	var flushed []int
	var rec *httptest.ResponseRecorder
	handler := Compressed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, event := range []string{"data: 1\n\n", "data: 2\n\n"} {
			_, _ = w.Write([]byte(event))
			w.(http.Flusher).Flush()
			flushed = append(flushed, rec.Body.Len())
		}
	}))
	request := httptest.NewRequest("GET", "/events", nil)
	request.Header.Set("Accept-Encoding", "gzip")
	rec = httptest.NewRecorder()
	handler.ServeHTTP(rec, request)
	if rec.Header().Get("Content-Length") != "" || len(flushed) != 2 || flushed[0] == 0 || flushed[1] <= flushed[0] {
		t.Fatalf("a stream: no Content-Length, bytes out at each flush; got %v, %v", rec.Header(), flushed)
	}
	if gunzip(t, rec.Body.Bytes()) != "data: 1\n\ndata: 2\n\n" {
		t.Fatal("the stream does not decode to the events")
	}
}
