package crosscheck

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// HTTPRequest is an HTTP plan's request: the method, URL, headers and body
// the lab's Python client (requests) sends.
type HTTPRequest struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Body    *string           `json:"body"`
}

// Go's transport writes these itself (the same values: a kept-alive
// HTTP/1.1 connection, the body's length).
var managed = map[string]bool{"Content-Length": true, "Connection": true, "Host": true}

// HTTP is a client over one kept-alive net/http connection; check decodes a
// reply's body and says whether it is a success in the protocol's terms.
func HTTP(plan Plan, check func(status int, body []byte) error) (*Client, error) {
	var req HTTPRequest
	if err := json.Unmarshal(plan.Request, &req); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	var body []byte
	if req.Body != nil {
		body = []byte(*req.Body)
	}
	timeout := plan.Timeout()
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: timeout}).DialContext, // TCP_NODELAY is Go's default
		MaxIdleConnsPerHost: 1,
		// The plan's Accept-Encoding is requests'; the reply is decompressed below, as requests does.
		DisableCompression:    true,
		ResponseHeaderTimeout: timeout,
		IdleConnTimeout:       90 * time.Second,
	}
	client := &http.Client{Transport: transport, Timeout: timeout}
	call := func() error {
		var reader io.Reader
		if body != nil {
			reader = bytes.NewReader(body)
		}
		r, err := http.NewRequest(req.Method, req.URL, reader)
		if err != nil {
			return err
		}
		for name, value := range req.Headers {
			if !managed[http.CanonicalHeaderKey(name)] {
				r.Header[name] = []string{value} // as spelled (SOAPAction), not canonicalised
			}
		}
		resp, err := client.Do(r)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if data, err = decompress(resp.Header.Get("Content-Encoding"), data); err != nil {
			return err
		}
		return check(resp.StatusCode, data)
	}
	// The first (untimed) warm-up call opens the connection the others keep alive.
	return &Client{Call: call, Sent: body, Close: transport.CloseIdleConnections}, nil
}

func decompress(encoding string, data []byte) ([]byte, error) {
	var r io.ReadCloser
	var err error
	switch encoding {
	case "", "identity":
		return data, nil
	case "gzip":
		r, err = gzip.NewReader(bytes.NewReader(data))
	case "deflate":
		r, err = zlib.NewReader(bytes.NewReader(data))
	default:
		return nil, Fail("content-encoding", "%q", encoding)
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// JSONStatus decodes a JSON reply; a status of 400 or more is a failure.
func JSONStatus(status int, body []byte) (any, error) {
	var v any
	if len(body) > 0 {
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, Fail("undecodable reply", "status %d: %v", status, err)
		}
	}
	if status >= 400 {
		return v, Fail(fmt.Sprintf("status %d", status), "%.200s", body)
	}
	return v, nil
}
