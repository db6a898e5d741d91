// gRPC with google.golang.org/grpc (contract/games.proto): the service of
// services/grpc/python_grpcio over the shared Go store, plus server
// reflection and grpc.health.v1.
//
// A request that is not a valid message (truncated, invalid UTF-8 in a
// string), or that carries unknown or mistyped fields, is answered with
// INVALID_ARGUMENT: grpc-go itself would answer INTERNAL for the first and
// keep the second as unknown fields. A request over 64 KiB is refused by
// grpc-go with RESOURCE_EXHAUSTED.
//
// Subscribe serves the push feeds (contract/push.md, "Over gRPC") as a server
// stream, on the push code the SSE and WebSocket services share
// (services/common/go/push.go): the subscription checked there, the synthetic
// feed paced there, each message typed here.
package main

import (
	"context"
	"encoding/json"
	"log"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	common "protolab/services/common/go"
	pb "protolab/services/common/go/gamespb"
	"protolab/services/common/go/pbgame"
)

type service struct {
	pb.UnimplementedGamesServer
	contract *common.Contract
	store    *common.Store
	codes    map[string]codes.Code
	push     *common.Push
	event    *pb.SyntheticEvent // fields 1..11 of the synthetic event (contract.json), sent_ns unset
}

func main() {
	contract, store := common.Setup()
	defer store.Close()
	push, err := common.LoadPush()
	if err != nil {
		log.Fatal(err)
	}
	s := &service{contract: contract, store: store, codes: map[string]codes.Code{}, push: push,
		event: syntheticEvent(push)}
	for code, row := range contract.Errors {
		var c codes.Code
		if err := c.UnmarshalJSON([]byte(`"` + row.GRPC + `"`)); err != nil {
			log.Fatalf("contract.json: gRPC code %q of %s: %v", row.GRPC, code, err)
		}
		s.codes[code] = c
	}
	// grpc-go answers RESOURCE_EXHAUSTED for a request over 64 KiB, or an
	// answer over max_response_bytes (a page of large games: ask for fewer).
	options := []grpc.ServerOption{grpc.MaxRecvMsgSize(contract.Limits.MaxRequestBytes),
		grpc.MaxSendMsgSize(contract.Limits.MaxResponseBytes),
		grpc.ForceServerCodecV2(rawCodec{encoding.GetCodecV2(protocodec.Name)})}
	// Over TLS when the lab asks for it (lab/axes.py, axis tls): grpc-go does the
	// handshake itself, on the plain listener, and offers "h2" by ALPN.
	if config := common.TLSConfig("h2"); config != nil {
		options = append(options, grpc.Creds(credentials.NewTLS(config)))
	}
	if common.Compression() == gzip.Name {
		options = append(options, grpc.UnaryInterceptor(compressReplies), grpc.StreamInterceptor(compressStream))
	}
	server := grpc.NewServer(options...)
	server.RegisterService(strictDesc(&pb.Games_ServiceDesc), s)
	healthServer := health.NewServer()
	healthServer.SetServingStatus(pb.Games_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(server, databaseHealth{healthServer, store})
	reflection.Register(server)

	ctx, stop := common.Stopping()
	defer stop()
	go func() {
		<-ctx.Done()
		healthServer.Shutdown()
		server.GracefulStop()
	}()
	if err := server.Serve(common.ListenTCP()); err != nil {
		log.Fatal(err)
	}
}

// compressReplies answers every call in gzip (grpc-encoding: gzip) when the
// client says it accepts it (grpc-accept-encoding), as grpcio's server does with
// compression=gzip (LAB_COMPRESSION=gzip; lab/axes.py, axis `compression`).
// Without it grpc-go answers in the encoding of the client's request: importing
// google.golang.org/grpc/encoding/gzip registers the codec for every variant,
// so a gzip request is decoded and answered in gzip by the base as well.
func compressReplies(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if accepted, err := grpc.ClientSupportedCompressors(ctx); err == nil {
		for _, name := range accepted {
			if name == gzip.Name {
				_ = grpc.SetSendCompressor(ctx, gzip.Name)
				break
			}
		}
	}
	return handler(ctx, req)
}

// compressStream is compressReplies for a server stream (Subscribe).
func compressStream(srv any, stream grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if accepted, err := grpc.ClientSupportedCompressors(stream.Context()); err == nil {
		for _, name := range accepted {
			if name == gzip.Name {
				_ = grpc.SetSendCompressor(stream.Context(), gzip.Name)
				break
			}
		}
	}
	return handler(srv, stream)
}

// databaseHealth is grpc.health.v1 whose Check also pings the database, as
// the Health RPC does: NOT_SERVING while it does not answer.
type databaseHealth struct {
	*health.Server
	store *common.Store
}

func (h databaseHealth) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	resp, err := h.Server.Check(ctx, req)
	if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING && h.store.Health(ctx) != nil {
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING}, nil
	}
	return resp, err
}

// strictDesc wraps each method's decoder: the request arrives as raw bytes
// (rawCodec) and is parsed here, so that bytes that do not parse, or parse
// with unknown fields (a mistyped field lands there too), are the caller's
// INVALID_ARGUMENT (grpc-go would answer INTERNAL itself, before the handler).
func strictDesc(desc *grpc.ServiceDesc) *grpc.ServiceDesc {
	strict := *desc
	strict.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, method := range desc.Methods {
		handler := method.Handler
		strict.Methods[i] = grpc.MethodDesc{MethodName: method.MethodName, Handler: func(
			srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor,
		) (any, error) {
			return handler(srv, ctx, func(m any) error {
				var raw rawRequest
				if err := dec(&raw); err != nil {
					return err
				}
				return parseStrict(raw, m.(proto.Message))
			}, interceptor)
		}}
	}
	strict.Streams = make([]grpc.StreamDesc, len(desc.Streams))
	for i, method := range desc.Streams {
		handler := method.Handler
		strict.Streams[i] = method
		strict.Streams[i].Handler = func(srv any, stream grpc.ServerStream) error {
			return handler(srv, strictStream{stream})
		}
	}
	return &strict
}

// strictStream parses a stream's request as strictDesc parses a unary one.
type strictStream struct{ grpc.ServerStream }

func (s strictStream) RecvMsg(m any) error {
	var raw rawRequest
	if err := s.ServerStream.RecvMsg(&raw); err != nil {
		return err
	}
	return parseStrict(raw, m.(proto.Message))
}

// parseStrict parses a request: INVALID_ARGUMENT when it does not parse, or
// parses with unknown fields.
func parseStrict(raw []byte, message proto.Message) error {
	name := message.ProtoReflect().Descriptor().Name()
	if err := proto.Unmarshal(raw, message); err != nil {
		return status.Errorf(codes.InvalidArgument, "malformed %s message: %v", name, err)
	}
	if number, found := pbgame.UnknownField(message.ProtoReflect()); found {
		return status.Errorf(codes.InvalidArgument, "unknown or mistyped field number %d in %s", number, name)
	}
	return nil
}

// rawRequest is a request's bytes, left for the handler to parse.
type rawRequest []byte

// rawCodec is grpc-go's proto codec, except that a rawRequest receives the
// bytes unparsed.
type rawCodec struct{ encoding.CodecV2 }

func (c rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if raw, ok := v.(*rawRequest); ok {
		*raw = data.Materialize()
		return nil
	}
	return c.CodecV2.Unmarshal(data, v)
}

func (s *service) fail(err error) error {
	e := common.AsError(err)
	return status.Error(s.codes[e.Code], e.Message)
}

func (s *service) CreateGame(ctx context.Context, m *pb.Game) (*pb.Game, error) {
	if m.Id != "" {
		return nil, status.Error(codes.InvalidArgument, "id must be empty in CreateGame: the server assigns it")
	}
	doc, err := s.store.Create(ctx, pbgame.GameOf(s.contract, m))
	if err != nil {
		return nil, s.fail(err)
	}
	return pbgame.GameMessage(doc), nil
}

func (s *service) GetGame(ctx context.Context, m *pb.GameId) (*pb.Game, error) {
	var game pbgame.StoredGame
	if err := s.store.GetInto(ctx, m.Id, &game); err != nil {
		return nil, s.fail(err)
	}
	return game.Message(), nil
}

func (s *service) ListGames(ctx context.Context, m *pb.ListGamesRequest) (*pb.GameList, error) {
	limit := int64(m.Limit)
	if limit == 0 { // proto3's unset value: the default
		limit = int64(s.contract.Limits.DefaultListLimit)
	}
	var games []pbgame.StoredGame // cursor.All sizes it to the page
	if err := s.store.ListInto(ctx, limit, int64(m.Offset), &games); err != nil {
		return nil, s.fail(err)
	}
	list := &pb.GameList{Games: make([]*pb.Game, len(games))}
	for i, game := range games {
		list.Games[i] = game.Message()
	}
	return list, nil
}

func (s *service) UpdateGame(ctx context.Context, m *pb.Game) (*pb.Game, error) {
	doc, err := s.store.Update(ctx, m.Id, pbgame.GameOf(s.contract, m))
	if err != nil {
		return nil, s.fail(err)
	}
	return pbgame.GameMessage(doc), nil
}

func (s *service) DeleteGame(ctx context.Context, m *pb.GameId) (*pb.Empty, error) {
	if err := s.store.Delete(ctx, m.Id); err != nil {
		return nil, s.fail(err)
	}
	return &pb.Empty{}, nil
}

func (s *service) Health(ctx context.Context, _ *pb.Empty) (*pb.Empty, error) {
	if err := s.store.Health(ctx); err != nil {
		return nil, s.fail(err)
	}
	return &pb.Empty{}, nil
}

// syntheticEvent is the synthetic feed's event (contract.json
// push.synthetic_event) as a message: its field i+1 (field_i) holds the
// event's field i, in the type the .proto gives it; sent_ns is set per message.
func syntheticEvent(push *common.Push) *pb.SyntheticEvent {
	event := &pb.SyntheticEvent{}
	r := event.ProtoReflect()
	fields := r.Descriptor().Fields()
	for i, raw := range push.SyntheticEvent {
		fd := fields.ByNumber(protoreflect.FieldNumber(i + 1))
		if i == push.TimestampField || fd == nil {
			continue
		}
		var value any
		decoder := json.NewDecoder(strings.NewReader(string(raw)))
		decoder.UseNumber()
		if err := decoder.Decode(&value); err != nil {
			log.Fatalf("contract.json synthetic_event[%d]: %v", i, err)
		}
		var v protoreflect.Value
		var err error
		switch fd.Kind() {
		case protoreflect.StringKind:
			text, ok := value.(string)
			if !ok {
				log.Fatalf("contract.json synthetic_event[%d]: %s is no string", i, raw)
			}
			v = protoreflect.ValueOfString(text)
		case protoreflect.Int64Kind:
			var n int64
			n, err = value.(json.Number).Int64()
			v = protoreflect.ValueOfInt64(n)
		case protoreflect.DoubleKind:
			var f float64
			f, err = value.(json.Number).Float64()
			v = protoreflect.ValueOfFloat64(f)
		default:
			log.Fatalf("SyntheticEvent.%s: a %v field, not string, int64 or double", fd.Name(), fd.Kind())
		}
		if err != nil {
			log.Fatalf("contract.json synthetic_event[%d]: %v", i, err)
		}
		r.Set(fd, v)
	}
	return event
}

// Subscribe serves a push feed (contract/push.md) as a server stream: the
// subscription's opening is the response's headers ("subscribed: <feed>"), a
// bounded feed's end the OK status with trailer "sent: <N>", an error the
// stream's status.
func (s *service) Subscribe(m *pb.SubscribeRequest, stream pb.Games_SubscribeServer) error {
	params := map[string]any{}
	for name, value := range map[string]*int64{"batch": m.Batch, "rate": m.Rate, "count": m.Count} {
		if value != nil {
			params[name] = json.Number(strconv.FormatInt(*value, 10))
		}
	}
	sub, err := s.push.Subscribe(m.Feed, params, m.LastEventId)
	if err != nil {
		return s.fail(err)
	}
	ctx := stream.Context()
	feed, err := sub.Open(ctx, s.store)
	if err != nil {
		return s.fail(err)
	}
	defer feed.Close()
	if err := stream.SendHeader(metadata.Pairs("subscribed", sub.Feed)); err != nil {
		return err
	}
	var sent int64
	var ended bool
	if sub.Feed == "changes" {
		sent, ended, err = feed.Changes(ctx, func(c common.Change) error {
			change := &pb.Change{Type: c.Type}
			change.Id, _ = c.ID.(string)
			if c.Game != nil {
				change.Game = pbgame.GameMessage(c.Game)
			}
			return stream.Send(&pb.PushMessage{Id: c.Token, Change: change})
		})
	} else {
		sent, ended, err = feed.Paced(ctx, func(k int64) error {
			event := proto.Clone(s.event).(*pb.SyntheticEvent)
			event.SentNs = time.Now().UnixNano() // stamped just before Send serializes the message
			events := make([]*pb.SyntheticEvent, sub.Batch)
			for i := range events {
				events[i] = event // one send time per message: the same event, serialized batch times
			}
			return stream.Send(&pb.PushMessage{Id: strconv.FormatInt(k, 10), Events: events})
		})
	}
	if ended {
		stream.SetTrailer(metadata.Pairs("sent", strconv.FormatInt(sent, 10)))
		return nil
	}
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	if _, isStatus := status.FromError(err); isStatus {
		return err // the stream's own failure, as grpc-go reported it
	}
	return s.fail(err)
}
