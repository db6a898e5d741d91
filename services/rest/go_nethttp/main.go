// REST over HTTP/1.1 with net/http and Go 1.22 ServeMux patterns
// (contract/openapi.yaml): the same routes, bodies and errors as
// services/rest/python_flask, over the shared Go store.
package main

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	common "protolab/services/common/go"
)

type service struct {
	contract *common.Contract
	store    *common.Store
}

func main() {
	contract, store := common.Setup()
	defer store.Close()
	s := &service{contract: contract, store: store}
	common.ServeHTTP(common.Compressed(s.uriLimit(s.routes())))
}

func (s *service) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", common.HealthHandler(s.contract, s.store))
	mux.HandleFunc("POST /games", s.create)
	mux.HandleFunc("GET /games", s.list)
	mux.HandleFunc("GET /games/{id}", s.get)
	mux.HandleFunc("PUT /games/{id}", s.update)
	mux.HandleFunc("DELETE /games/{id}", s.delete)
	mux.HandleFunc("/", s.unrouted)
	return mux
}

// uriLimit answers a request target over max_uri_bytes with the contract's 414.
func (s *service) uriLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.contract.CheckURISize(len(r.RequestURI)); err != nil {
			e := common.AsError(err)
			s.failWith(w, http.StatusRequestURITooLong, e.Code, e.Message)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *service) reply(w http.ResponseWriter, status int, body any) {
	data := common.MarshalJSON(body)
	if err := s.contract.CheckResponseSize(len(data)); err != nil {
		w.Header().Del("Location")
		s.fail(w, err)
		return
	}
	common.WriteJSON(w, status, data)
}

// unsupportedMedia is a body that is not JSON: 415, the contract's INVALID_ARGUMENT.
type unsupportedMedia string

func (u unsupportedMedia) Error() string { return string(u) }

func (s *service) fail(w http.ResponseWriter, err error) {
	if u, ok := err.(unsupportedMedia); ok {
		s.failWith(w, http.StatusUnsupportedMediaType, s.contract.CodeOfHTTPStatus(http.StatusUnsupportedMediaType), string(u))
		return
	}
	e := common.AsError(err)
	s.failWith(w, s.contract.HTTPStatus(e.Code), e.Code, e.Message)
}

func (s *service) failWith(w http.ResponseWriter, status int, code, message string) {
	common.WriteJSON(w, status, common.MarshalJSON(map[string]any{
		"error": map[string]any{"code": code, "message": message}}))
}

// unrouted answers what no route takes: 405 with Allow for a known path, else 404.
func (s *service) unrouted(w http.ResponseWriter, r *http.Request) {
	allow := ""
	switch {
	case r.URL.Path == "/games":
		allow = "GET, POST"
	case r.URL.Path == "/health":
		allow = "GET"
	case strings.HasPrefix(r.URL.Path, "/games/") && len(r.URL.Path) > len("/games/") &&
		!strings.Contains(r.URL.Path[len("/games/"):], "/"):
		allow = "GET, PUT, DELETE"
	}
	if allow == "" {
		s.failWith(w, http.StatusNotFound, common.NotFound, "The requested URL was not found on the server.")
		return
	}
	w.Header().Set("Allow", allow)
	s.failWith(w, http.StatusMethodNotAllowed, s.contract.CodeOfHTTPStatus(http.StatusMethodNotAllowed),
		"The method is not allowed for the requested URL.")
}

func (s *service) body(r *http.Request) (any, error) {
	data, err := s.contract.ReadBody(r) // read whole first: the connection stays usable
	if err != nil {
		return nil, err
	}
	if media, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); media != "application/json" {
		if media == "" {
			media = "untyped"
		}
		return nil, unsupportedMedia("the body must be application/json, not '" + media + "'")
	}
	v, err := common.DecodeJSON(data)
	if err != nil {
		return nil, common.Errorf(common.InvalidArgument, "malformed JSON body: %v", err)
	}
	return v, nil
}

// intArg is a non-negative integer query parameter, or the default.
func intArg(r *http.Request, name string, def int64) (int64, error) {
	values, present := r.URL.Query()[name]
	if !present || len(values) == 0 {
		return def, nil
	}
	if len(values) > 1 { // which one counts is not for a server to guess
		return 0, common.Errorf(common.InvalidArgument, "query parameter '%s' given %d times: at most once", name, len(values))
	}
	raw := values[0]
	if raw == "" || strings.Trim(raw, "0123456789") != "" {
		return 0, common.Errorf(common.InvalidArgument, "query parameter '%s' must be a non-negative integer", name)
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil { // beyond int64: over any limit
		n = 1<<63 - 1
	}
	return n, nil
}

func (s *service) create(w http.ResponseWriter, r *http.Request) {
	game, err := s.body(r)
	if err == nil {
		var created bson.D
		if created, err = s.store.Create(r.Context(), game); err == nil {
			w.Header().Set("Location", "/games/"+created[0].Value.(string))
			s.reply(w, http.StatusCreated, created)
			return
		}
	}
	s.fail(w, err)
}

func (s *service) list(w http.ResponseWriter, r *http.Request) {
	limit, err := intArg(r, "limit", int64(s.contract.Limits.DefaultListLimit))
	if err != nil {
		s.fail(w, err)
		return
	}
	offset, err := intArg(r, "offset", 0)
	if err != nil {
		s.fail(w, err)
		return
	}
	games, err := s.store.List(r.Context(), limit, offset)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, http.StatusOK, games)
}

func (s *service) get(w http.ResponseWriter, r *http.Request) {
	game, err := s.store.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, http.StatusOK, game)
}

func (s *service) update(w http.ResponseWriter, r *http.Request) {
	game, err := s.body(r)
	if err == nil {
		var updated bson.D
		if updated, err = s.store.Update(r.Context(), r.PathValue("id"), game); err == nil {
			s.reply(w, http.StatusOK, updated)
			return
		}
	}
	s.fail(w, err)
}

func (s *service) delete(w http.ResponseWriter, r *http.Request) {
	if err := s.store.Delete(r.Context(), r.PathValue("id")); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
