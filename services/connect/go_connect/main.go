// Connect RPC with connect-go (connectrpc.com/connect, contract/games.proto):
// the Games service of services/grpc/go_grpc over the shared Go store, from one
// net/http handler that speaks the three wire protocols connect-go serves:
// Connect (unary as a plain HTTP POST, or a GET for the calls without side
// effects), gRPC and gRPC-Web, each with the protobuf and the JSON codec, over
// HTTP/1.1 and cleartext HTTP/2 (h2c: gRPC needs HTTP/2), or both by ALPN over
// TLS (lab/axes.py, axis tls).
//
// Errors are the contract's codes as Connect codes (contract/contract.json,
// column "connect"); connect-go spells them as each wire protocol does (an HTTP
// status and a JSON error body for Connect, grpc-status for gRPC and gRPC-Web).
// A request that is not a valid message, or that carries unknown or mistyped
// fields, is INVALID_ARGUMENT (./codec: connect-go's own codecs keep unknown
// protobuf fields and discard unknown JSON ones); one over 64 KiB is
// RESOURCE_EXHAUSTED (connect-go's read limit).
package main

import (
	"context"
	"errors"
	"log"
	"math"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoreflect"

	common "protolab/services/common/go"
	pb "protolab/services/common/go/gamespb"
	"protolab/services/common/go/pbgame"
	"protolab/services/connect/go_connect/codec"
)

const service = "/protolab.games.v1.Games/"

type server struct {
	contract *common.Contract
	store    *common.Store
	codes    map[string]connect.Code
}

func main() {
	contract, store := common.Setup()
	defer store.Close()
	s := &server{contract: contract, store: store, codes: map[string]connect.Code{}}
	for code, row := range contract.Errors {
		var c connect.Code
		if err := c.UnmarshalText([]byte(row.Connect)); err != nil {
			log.Fatalf("contract.json: Connect code %q of %s: %v", row.Connect, code, err)
		}
		s.codes[code] = c
	}
	common.ServeHTTPAndH2(s.handler())
}

// handler is the one http.Handler of every method, each with the options of the
// lab's contract: strict codecs, the request and reply limits, and compression
// only where the lab asks for it (lab/axes.py, axis compression).
func (s *server) handler() http.Handler {
	options := []connect.HandlerOption{
		connect.WithCodec(codec.Proto{}),
		connect.WithCodec(codec.JSON{Spelling: "json"}),
		connect.WithCodec(codec.JSON{Spelling: "json; charset=utf-8"}),
		connect.WithReadMaxBytes(s.contract.Limits.MaxRequestBytes),
		connect.WithSendMaxBytes(s.contract.Limits.MaxResponseBytes),
	}
	if common.Compression() == "" {
		// gzip requests are still read; replies go out uncompressed even when the
		// client accepts gzip (connect-go would compress every reply it may).
		options = append(options, connect.WithCompressMinBytes(math.MaxInt32))
	}
	safe := append([]connect.HandlerOption{connect.WithIdempotency(connect.IdempotencyNoSideEffects)}, options...)
	method := func(name string) connect.HandlerOption {
		return connect.WithSchema(pb.File_contract_games_proto.Services().ByName("Games").Methods().ByName(protoreflect.Name(name)))
	}
	mux := http.NewServeMux()
	mux.Handle(service+"CreateGame", connect.NewUnaryHandler(service+"CreateGame", s.createGame, append(options, method("CreateGame"))...))
	mux.Handle(service+"GetGame", connect.NewUnaryHandler(service+"GetGame", s.getGame, append(safe, method("GetGame"))...))
	mux.Handle(service+"ListGames", connect.NewUnaryHandler(service+"ListGames", s.listGames, append(safe, method("ListGames"))...))
	mux.Handle(service+"UpdateGame", connect.NewUnaryHandler(service+"UpdateGame", s.updateGame, append(options, method("UpdateGame"))...))
	mux.Handle(service+"DeleteGame", connect.NewUnaryHandler(service+"DeleteGame", s.deleteGame, append(options, method("DeleteGame"))...))
	mux.Handle(service+"Health", connect.NewUnaryHandler(service+"Health", s.health, append(safe, method("Health"))...))
	return mux
}

func (s *server) fail(err error) error {
	e := common.AsError(err)
	return connect.NewError(s.codes[e.Code], errors.New(e.Message))
}

func (s *server) createGame(ctx context.Context, req *connect.Request[pb.Game]) (*connect.Response[pb.Game], error) {
	if req.Msg.Id != "" {
		return nil, connect.NewError(connect.CodeInvalidArgument,
			errors.New("id must be empty in CreateGame: the server assigns it"))
	}
	doc, err := s.store.Create(ctx, pbgame.GameOf(s.contract, req.Msg))
	if err != nil {
		return nil, s.fail(err)
	}
	return connect.NewResponse(pbgame.GameMessage(doc)), nil
}

func (s *server) getGame(ctx context.Context, req *connect.Request[pb.GameId]) (*connect.Response[pb.Game], error) {
	var game pbgame.StoredGame
	if err := s.store.GetInto(ctx, req.Msg.Id, &game); err != nil {
		return nil, s.fail(err)
	}
	return connect.NewResponse(game.Message()), nil
}

func (s *server) listGames(ctx context.Context, req *connect.Request[pb.ListGamesRequest]) (*connect.Response[pb.GameList], error) {
	limit := int64(req.Msg.Limit)
	if limit == 0 { // proto3's unset value: the default
		limit = int64(s.contract.Limits.DefaultListLimit)
	}
	var games []pbgame.StoredGame // cursor.All sizes it to the page
	if err := s.store.ListInto(ctx, limit, int64(req.Msg.Offset), &games); err != nil {
		return nil, s.fail(err)
	}
	list := &pb.GameList{Games: make([]*pb.Game, len(games))}
	for i, game := range games {
		list.Games[i] = game.Message()
	}
	return connect.NewResponse(list), nil
}

func (s *server) updateGame(ctx context.Context, req *connect.Request[pb.Game]) (*connect.Response[pb.Game], error) {
	doc, err := s.store.Update(ctx, req.Msg.Id, pbgame.GameOf(s.contract, req.Msg))
	if err != nil {
		return nil, s.fail(err)
	}
	return connect.NewResponse(pbgame.GameMessage(doc)), nil
}

func (s *server) deleteGame(ctx context.Context, req *connect.Request[pb.GameId]) (*connect.Response[pb.Empty], error) {
	if err := s.store.Delete(ctx, req.Msg.Id); err != nil {
		return nil, s.fail(err)
	}
	return connect.NewResponse(&pb.Empty{}), nil
}

func (s *server) health(ctx context.Context, _ *connect.Request[pb.Empty]) (*connect.Response[pb.Empty], error) {
	if err := s.store.Health(ctx); err != nil {
		return nil, s.fail(err)
	}
	return connect.NewResponse(&pb.Empty{}), nil
}
