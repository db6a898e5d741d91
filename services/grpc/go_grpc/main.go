// gRPC with google.golang.org/grpc (contract/games.proto): the service of
// services/grpc/python_grpcio over the shared Go store, plus server
// reflection and grpc.health.v1.
//
// A request that is not a valid message (truncated, invalid UTF-8 in a
// string), or that carries unknown or mistyped fields, is answered with
// INVALID_ARGUMENT: grpc-go itself would answer INTERNAL for the first and
// keep the second as unknown fields. A request over 64 KiB is refused by
// grpc-go with RESOURCE_EXHAUSTED.
package main

import (
	"context"
	"log"

	"go.mongodb.org/mongo-driver/v2/bson"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	common "protolab/services/common/go"
	pb "protolab/services/common/go/gamespb"
)

type service struct {
	pb.UnimplementedGamesServer
	contract *common.Contract
	store    *common.Store
	codes    map[string]codes.Code
}

func main() {
	contract, store := common.Setup()
	defer store.Close()
	s := &service{contract: contract, store: store, codes: map[string]codes.Code{}}
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
		options = append(options, grpc.UnaryInterceptor(compressReplies))
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
				message := m.(proto.Message)
				name := message.ProtoReflect().Descriptor().Name()
				if err := proto.Unmarshal(raw, message); err != nil {
					return status.Errorf(codes.InvalidArgument, "malformed %s message: %v", name, err)
				}
				if number, found := unknownField(message.ProtoReflect()); found {
					return status.Errorf(codes.InvalidArgument,
						"unknown or mistyped field number %d in %s", number, name)
				}
				return nil
			}, interceptor)
		}}
	}
	return &strict
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

// unknownField finds a field number the schema does not know, in the
// message or any nested one.
func unknownField(m protoreflect.Message) (protoreflect.FieldNumber, bool) {
	if raw := m.GetUnknown(); len(raw) > 0 {
		number, _, _ := protowire.ConsumeTag(raw)
		return number, true
	}
	var number protoreflect.FieldNumber
	found := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil {
			return true
		}
		if fd.IsList() {
			for i := 0; i < v.List().Len() && !found; i++ {
				number, found = unknownField(v.List().Get(i).Message())
			}
		} else {
			number, found = unknownField(v.Message())
		}
		return !found
	})
	return number, found
}

func (s *service) fail(err error) error {
	e := common.AsError(err)
	return status.Error(s.codes[e.Code], e.Message)
}

func (s *service) CreateGame(ctx context.Context, m *pb.Game) (*pb.Game, error) {
	if m.Id != "" {
		return nil, status.Error(codes.InvalidArgument, "id must be empty in CreateGame: the server assigns it")
	}
	doc, err := s.store.Create(ctx, s.gameOf(m))
	if err != nil {
		return nil, s.fail(err)
	}
	return s.message(doc), nil
}

// stored is a stored game decoded straight into the generated message (its
// json tags are the stored keys; the store's typed collection reads them).
type stored struct {
	ID       string `bson:"_id"`
	*pb.Game `bson:",inline"`
}

func (g stored) message() *pb.Game {
	g.Game.Id = g.ID
	return g.Game
}

func (s *service) GetGame(ctx context.Context, m *pb.GameId) (*pb.Game, error) {
	var game stored
	if err := s.store.GetInto(ctx, m.Id, &game); err != nil {
		return nil, s.fail(err)
	}
	return game.message(), nil
}

func (s *service) ListGames(ctx context.Context, m *pb.ListGamesRequest) (*pb.GameList, error) {
	limit := int64(m.Limit)
	if limit == 0 { // proto3's unset value: the default
		limit = int64(s.contract.Limits.DefaultListLimit)
	}
	var games []stored // cursor.All sizes it to the page
	if err := s.store.ListInto(ctx, limit, int64(m.Offset), &games); err != nil {
		return nil, s.fail(err)
	}
	list := &pb.GameList{Games: make([]*pb.Game, len(games))}
	for i, game := range games {
		list.Games[i] = game.message()
	}
	return list, nil
}

func (s *service) UpdateGame(ctx context.Context, m *pb.Game) (*pb.Game, error) {
	doc, err := s.store.Update(ctx, m.Id, s.gameOf(m))
	if err != nil {
		return nil, s.fail(err)
	}
	return s.message(doc), nil
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

// gameOf is a message's game fields (no id) as the JSON values the store
// validates, by the contract's field table (contract/grpc_codec.py).
func (s *service) gameOf(m *pb.Game) map[string]any {
	r := m.ProtoReflect()
	fields := r.Descriptor().Fields()
	game := make(map[string]any, len(s.contract.Fields))
	for _, f := range s.contract.Fields {
		fd := fields.ByName(protoreflect.Name(f.Name))
		if fd == nil {
			continue // the store reports it missing
		}
		switch f.Kind {
		case common.KindNullableBool:
			if r.Has(fd) {
				game[f.Name] = r.Get(fd).Bool()
			} else {
				game[f.Name] = nil
			}
		case common.KindStringList:
			list := r.Get(fd).List()
			items := make([]any, list.Len())
			for i := range items {
				items[i] = list.Get(i).String()
			}
			game[f.Name] = items
		case common.KindLanguageDetails:
			list := r.Get(fd).List()
			items := make([]any, list.Len())
			for i := range items {
				detail := list.Get(i).Message()
				dfields := detail.Descriptor().Fields()
				obj := make(map[string]any, len(s.contract.DetailFields))
				for _, df := range s.contract.DetailFields {
					if dfd := dfields.ByName(protoreflect.Name(df.Name)); dfd != nil {
						obj[df.Name] = detail.Get(dfd).Interface()
					}
				}
				items[i] = obj
			}
			game[f.Name] = items
		default: // string, bool
			game[f.Name] = r.Get(fd).Interface()
		}
	}
	return game
}

// message is a stored game as a Game message.
func (s *service) message(doc bson.D) *pb.Game {
	m := &pb.Game{}
	r := m.ProtoReflect()
	setFields(r, doc)
	return m
}

func setFields(r protoreflect.Message, doc bson.D) {
	fields := r.Descriptor().Fields()
	for _, e := range doc {
		fd := fields.ByName(protoreflect.Name(e.Key))
		if fd == nil || e.Value == nil {
			continue
		}
		switch v := e.Value.(type) {
		case string:
			r.Set(fd, protoreflect.ValueOfString(v))
		case bool:
			r.Set(fd, protoreflect.ValueOfBool(v))
		case bson.A:
			list := r.Mutable(fd).List()
			for _, item := range v {
				switch x := item.(type) {
				case string:
					list.Append(protoreflect.ValueOfString(x))
				case bson.D:
					element := list.NewElement()
					setFields(element.Message(), x)
					list.Append(element)
				}
			}
		}
	}
}
