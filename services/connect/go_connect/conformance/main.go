// The conformance server of connect/go_connect: the ConformanceService of
// Connect's own conformance suite (connectrpc.com/conformance, run by its
// connectconformance runner with its reference client; clients/connect/
// conformance.py) served by connect-go as the lab's Connect service is
// served: the same library, the same strict codecs (../codec), h2c beside
// HTTP/1.1, connect-go's gzip, and the request limit the runner asks for.
//
// It serves the unary methods (Unary, IdempotentUnary, as a GET too), the
// only kind the lab's service has, and leaves Unimplemented unregistered, as
// the suite expects; the stream methods are not served, and the runner's
// configuration (conformance.yaml) claims none. It reads the runner's
// ServerCompatRequest (size-delimited protobuf) on stdin, listens on a free
// port of 127.0.0.1, and writes the ServerCompatResponse to stdout. What the
// handlers do follows the suite's own reference server (Apache-2.0), written
// here against connect-go v1's API.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"protolab/services/connect/go_connect/codec"
	pb "protolab/services/connect/go_connect/conformance/conformancepb"
)

const service = "/connectrpc.conformance.v1.ConformanceService/"

type queryKey struct{}

func main() {
	request := &pb.ServerCompatRequest{}
	if err := readDelimited(os.Stdin, request); err != nil {
		log.Fatalf("reading the ServerCompatRequest on stdin: %v", err)
	}
	if request.UseTls {
		log.Fatal("TLS: not claimed by this server's configuration (the lab measures its own TLS: lab/axes.py, axis tls)")
	}
	options := []connect.HandlerOption{
		connect.WithCodec(codec.Proto{}),
		connect.WithCodec(codec.JSON{Spelling: "json"}),
		connect.WithCodec(codec.JSON{Spelling: "json; charset=utf-8"}),
	}
	if request.MessageReceiveLimit > 0 {
		options = append(options, connect.WithReadMaxBytes(int(request.MessageReceiveLimit)))
	}
	mux := http.NewServeMux()
	mux.Handle(service+"Unary", connect.NewUnaryHandler(service+"Unary", unary, options...))
	mux.Handle(service+"IdempotentUnary", connect.NewUnaryHandler(service+"IdempotentUnary", idempotentUnary,
		append(options, connect.WithIdempotency(connect.IdempotencyNoSideEffects))...))
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet { // the query of a Connect GET, for the request info
			r = r.WithContext(context.WithValue(r.Context(), queryKey{}, r.URL.Query()))
		}
		mux.ServeHTTP(w, r)
	})
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	server := &http.Server{Handler: h2c.NewHandler(handler, &http2.Server{}), ReadHeaderTimeout: 30 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	address := listener.Addr().(*net.TCPAddr)
	if err := writeDelimited(os.Stdout, &pb.ServerCompatResponse{Host: "127.0.0.1", Port: uint32(address.Port)}); err != nil {
		log.Fatal(err)
	}
	if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// readDelimited reads one message after its 4-byte big-endian size.
func readDelimited(r io.Reader, m proto.Message) error {
	var size uint32
	if err := binary.Read(r, binary.BigEndian, &size); err != nil {
		return err
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return err
	}
	return proto.Unmarshal(data, m)
}

// writeDelimited writes one message after its 4-byte big-endian size.
func writeDelimited(w io.Writer, m proto.Message) error {
	data, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	if err := binary.Write(w, binary.BigEndian, uint32(len(data))); err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

func unary(ctx context.Context, req *connect.Request[pb.UnaryRequest]) (*connect.Response[pb.UnaryResponse], error) {
	payload, err := respond(ctx, req.Msg, req.Msg.GetResponseDefinition(), req.Header())
	if err != nil {
		return nil, err
	}
	response := connect.NewResponse(&pb.UnaryResponse{Payload: payload})
	decorate(response, req.Msg.GetResponseDefinition())
	return response, nil
}

func idempotentUnary(ctx context.Context, req *connect.Request[pb.IdempotentUnaryRequest]) (*connect.Response[pb.IdempotentUnaryResponse], error) {
	payload, err := respond(ctx, req.Msg, req.Msg.GetResponseDefinition(), req.Header())
	if err != nil {
		return nil, err
	}
	response := connect.NewResponse(&pb.IdempotentUnaryResponse{Payload: payload})
	decorate(response, req.Msg.GetResponseDefinition())
	return response, nil
}

type headered interface {
	Header() http.Header
	Trailer() http.Header
}

// decorate sets the definition's response headers and trailers.
func decorate(response headered, def *pb.UnaryResponseDefinition) {
	if def == nil {
		return
	}
	addHeaders(def.ResponseHeaders, response.Header())
	addHeaders(def.ResponseTrailers, response.Trailer())
}

func addHeaders(src []*pb.Header, dest http.Header) {
	for _, header := range src {
		for _, value := range header.Value {
			dest.Add(header.Name, value)
		}
	}
}

// respond is the payload the definition asks for (the request echoed in its
// request info), or its error (the request info in the error's details),
// after the definition's delay.
func respond(ctx context.Context, msg proto.Message, def *pb.UnaryResponseDefinition, header http.Header) (*pb.ConformancePayload, error) {
	request, err := anypb.New(msg)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("unable to convert message: %w", err))
	}
	info := requestInfo(ctx, header, request)
	if def == nil {
		return &pb.ConformancePayload{RequestInfo: info}, nil
	}
	defer time.Sleep(time.Duration(def.ResponseDelayMs) * time.Millisecond)
	switch response := def.Response.(type) {
	case *pb.UnaryResponseDefinition_Error:
		detail, err := anypb.New(info)
		if err != nil {
			return nil, connect.NewError(connect.CodeInternal, err)
		}
		connectErr := connect.NewError(connect.Code(response.Error.Code), errors.New(response.Error.GetMessage()))
		for _, item := range append(response.Error.Details, detail) {
			d, err := connect.NewErrorDetail(item)
			if err != nil {
				return nil, connect.NewError(connect.CodeInternal, err)
			}
			connectErr.AddDetail(d)
		}
		// connect-go v1 carries an error's metadata as one set: headers over
		// Connect, trailers over gRPC and gRPC-Web
		addHeaders(def.ResponseHeaders, connectErr.Meta())
		addHeaders(def.ResponseTrailers, connectErr.Meta())
		return nil, connectErr
	case *pb.UnaryResponseDefinition_ResponseData:
		return &pb.ConformancePayload{RequestInfo: info, Data: response.ResponseData}, nil
	case nil:
		return &pb.ConformancePayload{RequestInfo: info}, nil
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("unexpected response type %T", response))
	}
}

func requestInfo(ctx context.Context, header http.Header, request *anypb.Any) *pb.ConformancePayload_RequestInfo {
	info := &pb.ConformancePayload_RequestInfo{Requests: []*anypb.Any{request}}
	for name, values := range header {
		info.RequestHeaders = append(info.RequestHeaders, &pb.Header{Name: name, Value: values})
	}
	if deadline, ok := ctx.Deadline(); ok {
		timeout := time.Until(deadline).Milliseconds()
		info.TimeoutMs = &timeout
	}
	if query, ok := ctx.Value(queryKey{}).(url.Values); ok && len(query) > 0 {
		get := &pb.ConformancePayload_ConnectGetInfo{}
		for name, values := range query {
			get.QueryParams = append(get.QueryParams, &pb.Header{Name: name, Value: values})
		}
		info.ConnectGetInfo = get
	}
	return info
}
