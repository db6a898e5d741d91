// The Connect cross-check client: connect-go's client (connectrpc.com/connect)
// over one kept-alive HTTP/1.1 connection, the Connect protocol with the
// protobuf codec, as the lab's client sends it (clients/connect/client.py
// wire_plan): the request built from the lab client's message (protojson) into
// the generated type of the Go services (services/common/go/gamespb), a call
// without side effects as an HTTP GET. A call is a success when it returns
// no error. (A dynamic message would do for every method, but its encoding
// need not put the fields in the order the lab's client puts them.)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"protolab/clients/internal/crosscheck"
	"protolab/services/common/go/gamespb"
)

// Request is a Connect plan's request: the procedure, whether it goes as a
// GET, and the request message as protojson.
type Request struct {
	Procedure string          `json:"procedure"`
	Get       bool            `json:"get"`
	Message   json.RawMessage `json:"message"`
}

func main() {
	crosscheck.Main("connect-go", crosscheck.ModuleVersion("connectrpc.com/connect"), dial)
}

func dial(plan crosscheck.Plan) (*crosscheck.Client, error) {
	var req Request
	if err := json.Unmarshal(plan.Request, &req); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	method, err := lookup(req.Procedure)
	if err != nil {
		return nil, err
	}
	timeout := plan.Timeout()
	// One connection, kept alive, HTTP/1.1 as the lab's client speaks Connect.
	transport := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, ForceAttemptHTTP2: false,
		DialContext: (&net.Dialer{Timeout: timeout}).DialContext, ResponseHeaderTimeout: timeout}
	httpClient := &http.Client{Transport: transport, Timeout: timeout}
	// protobuf's binary codec (connect-go's default), as the lab's client; a GET where the plan says.
	options := []connect.ClientOption{connect.WithSchema(method)}
	if req.Get {
		options = append(options, connect.WithHTTPGet())
	}
	url := strings.TrimRight(plan.Endpoint, "/") + req.Procedure
	var call func() error
	var sent []byte
	// The generated types of each method (as protoc-gen-connect-go's client would name them).
	switch method.Name() {
	case "CreateGame", "UpdateGame":
		call, sent, err = unary[gamespb.Game, gamespb.Game](httpClient, url, options, req.Message, timeout)
	case "GetGame":
		call, sent, err = unary[gamespb.GameId, gamespb.Game](httpClient, url, options, req.Message, timeout)
	case "ListGames":
		call, sent, err = unary[gamespb.ListGamesRequest, gamespb.GameList](httpClient, url, options, req.Message, timeout)
	case "DeleteGame":
		call, sent, err = unary[gamespb.GameId, gamespb.Empty](httpClient, url, options, req.Message, timeout)
	case "Health":
		call, sent, err = unary[gamespb.Empty, gamespb.Empty](httpClient, url, options, req.Message, timeout)
	default:
		err = fmt.Errorf("no client for %s", req.Procedure)
	}
	if err != nil {
		return nil, err
	}
	return &crosscheck.Client{Call: call, Sent: sent, Close: transport.CloseIdleConnections}, nil
}

// unary is connect-go's client of one method: the request decoded from the
// plan's protojson into its generated type, and what the codec writes for it.
func unary[Req, Res any, PReq interface {
	*Req
	proto.Message
}](httpClient *http.Client, url string, options []connect.ClientOption, message json.RawMessage,
	timeout time.Duration) (func() error, []byte, error) {
	request := PReq(new(Req))
	if err := protojson.Unmarshal(message, request); err != nil {
		return nil, nil, fmt.Errorf("message: %w", err)
	}
	sent, err := proto.Marshal(request) // what the protobuf codec writes for it (the fingerprint)
	if err != nil {
		return nil, nil, err
	}
	client := connect.NewClient[Req, Res](httpClient, url, options...)
	call := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if _, err := client.CallUnary(ctx, connect.NewRequest((*Req)(request))); err != nil {
			return crosscheck.Fail("connect "+connect.CodeOf(err).String(), "%v", err)
		}
		return nil
	}
	return call, sent, nil
}

// lookup finds "/protolab.games.v1.Games/GetGame" in the generated file's descriptor.
func lookup(procedure string) (protoreflect.MethodDescriptor, error) {
	service, name, ok := strings.Cut(strings.TrimPrefix(procedure, "/"), "/")
	if ok {
		if s := gamespb.File_contract_games_proto.Services().ByName(protoreflect.FullName(service).Name()); s != nil &&
			string(s.FullName()) == service {
			if m := s.Methods().ByName(protoreflect.Name(name)); m != nil {
				return m, nil
			}
		}
	}
	return nil, fmt.Errorf("no procedure %q in contract/games.proto", procedure)
}
