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
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

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
	mux.HandleFunc("GET /graphql", s.graphql)
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("/", s.unrouted)
	common.ServeHTTP(common.Compressed(mux))
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

// respondChecked is respond, or RESOURCE_EXHAUSTED for an answer over max_response_bytes.
func (s *service) respondChecked(w http.ResponseWriter, status int, errs gqlerror.List, data json.RawMessage) {
	if err := s.contract.CheckResponseSize(len(data) + len(`{"data":}`)); err != nil && len(data) > 0 {
		s.failWith(w, err)
		return
	}
	respond(w, status, errs, data, true)
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
		w.Header().Set("Allow", "GET, POST")
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
	media := mediaType(r)
	if media == "" {
		w.Header().Set("Content-Type", jsonMedia)
		s.fail(w, http.StatusNotAcceptable, common.InvalidArgument,
			"Accept must allow "+graphqlResponseMedia+" or "+jsonMedia)
		return
	}
	w.Header().Set("Content-Type", media)
	decoded, refused := s.params(r)
	if refused != nil {
		s.fail(w, refused.status, refused.code, refused.message)
		return
	}
	body, ok := decoded.(map[string]any)
	query, isString := body["query"].(string)
	if !ok || !isString {
		s.fail(w, http.StatusBadRequest, common.InvalidArgument, "the request must have a string 'query'")
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
	if r.Method == http.MethodGet {
		if refused := mutationOverGet(query, params.OperationName); refused != nil {
			w.Header().Set("Allow", refused.allow)
			s.fail(w, refused.status, refused.code, refused.message)
			return
		}
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
	s.respondChecked(w, http.StatusOK, contractCodes(response.Errors), response.Data)
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

const (
	jsonMedia            = "application/json"
	graphqlResponseMedia = "application/graphql-response+json"
)

// mediaType is the reply's media type by Accept (as the Python service):
// application/graphql-response+json when the client names it and prefers it
// at least as much as JSON, else application/json (also for no Accept or
// */*); "" when Accept allows neither.
func mediaType(r *http.Request) string {
	header := r.Header.Get("Accept")
	if strings.TrimSpace(header) == "" {
		return jsonMedia
	}
	q := map[string]float64{}
	for _, part := range strings.Split(header, ",") {
		media, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		value := 1.0
		if raw, ok := params["q"]; ok {
			if value, err = strconv.ParseFloat(raw, 64); err != nil {
				value = 0
			}
		}
		q[media] = value
	}
	quality := func(media string) float64 {
		if v, ok := q[media]; ok {
			return v
		}
		if v, ok := q["application/*"]; ok {
			return v
		}
		return q["*/*"]
	}
	if _, named := q[graphqlResponseMedia]; named && quality(graphqlResponseMedia) > 0 &&
		quality(graphqlResponseMedia) >= quality(jsonMedia) {
		return graphqlResponseMedia
	}
	switch {
	case quality(jsonMedia) > 0 && quality(jsonMedia) >= quality(graphqlResponseMedia):
		return jsonMedia
	case quality(graphqlResponseMedia) > 0:
		return graphqlResponseMedia
	}
	return ""
}

// params reads a GraphQL request: GET's query string (query, operationName,
// variables as JSON) or POST's application/json body.
func (s *service) params(r *http.Request) (any, *refusal) {
	if r.Method == http.MethodGet {
		query := r.URL.Query()
		body := map[string]any{}
		if values, ok := query["query"]; ok {
			body["query"] = values[0]
		}
		if values, ok := query["operationName"]; ok {
			body["operationName"] = values[0]
		}
		if values, ok := query["variables"]; ok {
			variables, err := common.DecodeJSON([]byte(values[0]))
			if err != nil {
				return nil, &refusal{http.StatusBadRequest, common.InvalidArgument, "malformed JSON in 'variables': " + err.Error(), ""}
			}
			body["variables"] = variables
		}
		return body, nil
	}
	data, err := s.contract.ReadBody(r) // read whole first: the connection stays usable
	if err != nil {
		e := common.AsError(err)
		return nil, &refusal{s.contract.HTTPStatus(e.Code), e.Code, e.Message, ""}
	}
	if media, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); media != jsonMedia {
		if media == "" {
			media = "none"
		}
		return nil, &refusal{http.StatusUnsupportedMediaType, common.InvalidArgument,
			"a GraphQL POST must have Content-Type application/json, not '" + media + "'", ""}
	}
	decoded, err := common.DecodeJSON(data)
	if err != nil {
		return nil, &refusal{http.StatusBadRequest, common.InvalidArgument, "malformed JSON body: " + err.Error(), ""}
	}
	return decoded, nil
}

type refusal struct {
	status        int
	code, message string
	allow         string
}

// mutationOverGet refuses a mutation sent with GET (405, Allow: POST).
func mutationOverGet(query, operationName string) *refusal {
	document, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		return nil // execution reports the syntax error as usual
	}
	var operation *ast.OperationDefinition
	if operationName != "" {
		operation = document.Operations.ForName(operationName)
	} else if len(document.Operations) == 1 {
		operation = document.Operations[0]
	}
	if operation != nil && operation.Operation != ast.Query {
		return &refusal{http.StatusMethodNotAllowed, common.InvalidArgument,
			"a " + string(operation.Operation) + " needs POST", "POST"}
	}
	return nil
}
