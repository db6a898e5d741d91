// The gRPC cross-check client: grpc-go over one HTTP/2 connection, the
// request built from the lab client's message (protojson) into the generated
// type of the Go services (services/common/go/gamespb), the reply decoded into
// its generated type. A call is a success when its status is OK.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"protolab/clients/internal/crosscheck"
	"protolab/services/common/go/gamespb"
)

// Request is a gRPC plan's request: "package.Service/Method" and the request message as protojson.
type Request struct {
	Method  string          `json:"method"`
	Message json.RawMessage `json:"message"`
}

func main() {
	crosscheck.Main("grpc-go", crosscheck.ModuleVersion("google.golang.org/grpc"), connect)
}

func connect(plan crosscheck.Plan) (*crosscheck.Client, error) {
	var req Request
	if err := json.Unmarshal(plan.Request, &req); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	method, err := lookup(req.Method)
	if err != nil {
		return nil, err
	}
	inType, err := protoregistry.GlobalTypes.FindMessageByName(method.Input().FullName())
	if err != nil {
		return nil, err
	}
	outType, err := protoregistry.GlobalTypes.FindMessageByName(method.Output().FullName())
	if err != nil {
		return nil, err
	}
	in := inType.New().Interface()
	if err := protojson.Unmarshal(req.Message, in); err != nil {
		return nil, fmt.Errorf("message of %s: %w", req.Method, err)
	}
	sent, err := proto.Marshal(in) // what grpc-go's codec writes for it (the fingerprint)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(plan.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	if err := ready(conn, plan.Timeout()); err != nil {
		conn.Close()
		return nil, err
	}
	timeout, path := plan.Timeout(), "/"+req.Method
	call := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := conn.Invoke(ctx, path, in, outType.New().Interface()); err != nil {
			return crosscheck.Fail("grpc "+status.Code(err).String(), "%v", err)
		}
		return nil
	}
	return &crosscheck.Client{Call: call, Sent: sent, Close: func() { conn.Close() }}, nil
}

// lookup finds "protolab.games.v1.Games/GetGame" in the generated file's descriptor.
func lookup(full string) (protoreflect.MethodDescriptor, error) {
	service, name, ok := strings.Cut(full, "/")
	services := gamespb.File_contract_games_proto.Services()
	if ok {
		if s := services.ByName(protoreflect.FullName(service).Name()); s != nil && string(s.FullName()) == service {
			if m := s.Methods().ByName(protoreflect.Name(name)); m != nil {
				return m, nil
			}
		}
	}
	return nil, fmt.Errorf("no method %q in contract/games.proto", full)
}

// ready connects and waits for the connection, outside the timing.
func ready(conn *grpc.ClientConn, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn.Connect()
	for state := conn.GetState(); state != connectivity.Ready; state = conn.GetState() {
		if !conn.WaitForStateChange(ctx, state) {
			return fmt.Errorf("not ready within %v (last state %v)", timeout, state)
		}
	}
	return nil
}
