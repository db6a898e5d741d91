// GraphQL over HTTP with gqlgen (code generated from contract/schema.graphql
// by gqlgen.yml): the service of services/graphql/python_graphene over the
// shared Go store.
//
// POST /graphql with {"query", "variables", "operationName"}. Execution
// errors answer 200 with `errors`; a request that cannot be parsed,
// validated or coerced answers 400; an oversize one 413. Every error
// carries extensions.code from the contract's table. The HTTP layer is
// written here (not gqlgen's transports) so that body limits, status codes
// and error codes are the contract's; gqlgen's executor runs the query, with
// the query cache and introspection of gqlgen's default server.
package main

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	common "protolab/services/common/go"
	"protolab/services/graphql/go_gqlgen/generated"
)

func main() {
	contract, store := common.Setup()
	defer store.Close()
	exec := executor.New(generated.NewExecutableSchema(generated.Config{Resolvers: &resolver{store: store}}))
	exec.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	exec.Use(extension.Introspection{})
	s := &service{contract: contract, store: store, exec: exec}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /graphql", s.graphql)
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("/", s.unrouted)
	common.ServeHTTP(mux)
}

type service struct {
	contract *common.Contract
	store    *common.Store
	exec     *executor.Executor
}

// respond writes {"errors": [...], "data": ...} (errors first, data only when
// the request executed), compact, non-ASCII kept.
func respond(w http.ResponseWriter, status int, errs gqlerror.List, data json.RawMessage, withData bool) {
	body := make([]byte, 0, 1024)
	body = append(body, '{')
	if len(errs) > 0 {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(errs)
		body = append(body, `"errors":`...)
		body = append(body, bytes.TrimRight(buf.Bytes(), "\n")...)
	}
	if withData {
		if len(errs) > 0 {
			body = append(body, ',')
		}
		body = append(body, `"data":`...)
		if len(data) == 0 {
			data = json.RawMessage("null")
		}
		body = append(body, data...)
	}
	body = append(body, '}')
	common.WriteJSON(w, status, body)
}

func (s *service) fail(w http.ResponseWriter, status int, code, message string) {
	respond(w, status, gqlerror.List{{Message: message, Extensions: map[string]any{"code": code}}}, nil, false)
}

func (s *service) failWith(w http.ResponseWriter, err error) {
	e := common.AsError(err)
	s.fail(w, s.contract.HTTPStatus(e.Code), e.Code, e.Message)
}

func (s *service) unrouted(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/graphql":
		w.Header().Set("Allow", "POST")
	case "/health":
		w.Header().Set("Allow", "GET")
	default:
		s.fail(w, http.StatusNotFound, common.NotFound, "The requested URL was not found on the server.")
		return
	}
	s.fail(w, http.StatusMethodNotAllowed, s.contract.CodeOfHTTPStatus(http.StatusMethodNotAllowed),
		"The method is not allowed for the requested URL.")
}

func (s *service) health(w http.ResponseWriter, r *http.Request) {
	if err := s.store.Health(r.Context()); err != nil {
		s.failWith(w, err)
		return
	}
	common.WriteJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
}

func (s *service) graphql(w http.ResponseWriter, r *http.Request) {
	start := graphql.Now()
	data, err := s.contract.ReadBody(r)
	if err != nil {
		s.failWith(w, err)
		return
	}
	decoded, err := common.DecodeJSON(data)
	if err != nil {
		s.fail(w, http.StatusBadRequest, common.InvalidArgument, "malformed JSON body: "+err.Error())
		return
	}
	body, ok := decoded.(map[string]any)
	query, isString := body["query"].(string)
	if !ok || !isString {
		s.fail(w, http.StatusBadRequest, common.InvalidArgument, "the body must be an object with a string 'query'")
		return
	}
	params := &graphql.RawParams{Query: query, Headers: r.Header}
	switch v := body["variables"].(type) {
	case map[string]any:
		params.Variables = numbers(v).(map[string]any)
	case nil:
	default:
		if !falsy(v) { // Python's `body.get("variables") or {}`
			s.fail(w, http.StatusBadRequest, common.InvalidArgument, "'variables' must be an object")
			return
		}
	}
	switch v := body["operationName"].(type) {
	case string:
		params.OperationName = v
	case nil:
	default:
		s.fail(w, http.StatusBadRequest, common.InvalidArgument, "'operationName' must be a string")
		return
	}
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}

	ctx := graphql.StartOperationTrace(r.Context())
	rc, errs := s.exec.CreateOperationContext(ctx, params)
	if errs != nil {
		// Parse, validation or variable coercion: the request never executed.
		respond(w, http.StatusBadRequest, contractCodes(errs), nil, false)
		return
	}
	responses, ctx := s.exec.DispatchOperation(ctx, rc)
	response := responses(ctx)
	respond(w, http.StatusOK, contractCodes(response.Errors), response.Data, true)
}

// contractCodes gives every error a code of the contract: gqlgen's own
// (GRAPHQL_PARSE_FAILED, GRAPHQL_VALIDATION_FAILED, none) are the caller's
// INVALID_ARGUMENT.
func contractCodes(errs gqlerror.List) gqlerror.List {
	for _, e := range errs {
		code, _ := e.Extensions["code"].(string)
		switch code {
		case common.NotFound, common.InvalidArgument, common.ResourceExhausted, common.Unavailable,
			common.DeadlineExceeded, common.Internal:
		default:
			if e.Extensions == nil {
				e.Extensions = map[string]any{}
			}
			e.Extensions["code"] = common.InvalidArgument
		}
	}
	return errs
}

// numbers turns json.Number into int64 (an integer token that fits) or
// float64, as a JSON decoder without UseNumber would: gqlparser takes a
// json.Number (a string type) for a String, so 5 would pass as "5".
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, ok := common.Integer(x); ok {
			if n, err := x.Int64(); err == nil && i == n {
				return n
			}
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, item := range x {
			x[k] = numbers(item)
		}
	case []any:
		for i, item := range x {
			x[i] = numbers(item)
		}
	}
	return v
}

func falsy(v any) bool {
	switch x := v.(type) {
	case bool:
		return !x
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	}
	return false
}
