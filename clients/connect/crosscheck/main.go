// The Connect cross-check client: connect-go's client (connectrpc.com/connect)
// over one kept-alive HTTP/1.1 connection, the Connect protocol with the
// protobuf codec, as the lab's client sends it (clients/connect/client.py
// wire_plan): the request built from the lab client's message (protojson) into
// the generated type of the Go services (services/common/go/gamespb), a call
// without side effects as an HTTP GET. A call is a success when it returns
// no error.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

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
	request := dynamicpb.NewMessage(method.Input())
	if err := protojson.Unmarshal(req.Message, request); err != nil {
		return nil, fmt.Errorf("message of %s: %w", req.Procedure, err)
	}
	sent, err := proto.Marshal(request) // what the protobuf codec writes for it (the fingerprint)
	if err != nil {
		return nil, err
	}
	timeout := plan.Timeout()
	// One connection, kept alive, HTTP/1.1 as the lab's client speaks Connect.
	transport := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, ForceAttemptHTTP2: false,
		DialContext: (&net.Dialer{Timeout: timeout}).DialContext, ResponseHeaderTimeout: timeout}
	httpClient := &http.Client{Transport: transport, Timeout: timeout}
	// protobuf's binary codec (connect-go's default), as the lab's client; the reply decoded into
	// a dynamic message of the method's output type.
	options := []connect.ClientOption{connect.WithSchema(method),
		connect.WithResponseInitializer(func(spec connect.Spec, message any) error {
			reply, ok := message.(*dynamicpb.Message)
			if !ok {
				return fmt.Errorf("%T is not a dynamic message", message)
			}
			*reply = *dynamicpb.NewMessage(method.Output())
			return nil
		})}
	if req.Get {
		options = append(options, connect.WithHTTPGet())
	}
	client := connect.NewClient[dynamicpb.Message, dynamicpb.Message](httpClient,
		strings.TrimRight(plan.Endpoint, "/")+req.Procedure, options...)
	call := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if _, err := client.CallUnary(ctx, connect.NewRequest(request)); err != nil {
			return crosscheck.Fail("connect "+connect.CodeOf(err).String(), "%v", err)
		}
		return nil
	}
	return &crosscheck.Client{Call: call, Sent: sent, Close: transport.CloseIdleConnections}, nil
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
