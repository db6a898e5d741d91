package common

import (
	"io"
	"net/http"
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

// WriteJSON writes a compact JSON body (AppendJSON) with a status.
func WriteJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
