package common

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// The store of services/common/store.py over the official Go driver: the
// same validation before any database access, string ids (the appid for
// seeded games, a fresh ObjectId's hex for created ones), list in _id order
// with skip/limit, replace on update, and a lost or silent database answered
// as UNAVAILABLE after MONGODB_TIMEOUT_MS (default 5000).

const (
	DefaultDB  = "protolab"
	Collection = "games"
)

// Store is the games collection behind the contract's five operations.
type Store struct {
	Contract *Contract
	client   *mongo.Client
	games    *mongo.Collection
	// typed is the same collection for GetInto and ListInto, whose documents
	// decode straight into a service's own structs by their json tags (the
	// stored keys are the contract's field names, the json tags of the
	// generated gRPC and gqlgen types).
	typed *mongo.Collection
}

// TimeoutFromEnv is MONGODB_TIMEOUT_MS as a duration (default 5 s).
func TimeoutFromEnv() time.Duration {
	ms, err := strconv.Atoi(os.Getenv("MONGODB_TIMEOUT_MS"))
	if err != nil || ms <= 0 {
		ms = 5000
	}
	return time.Duration(ms) * time.Millisecond
}

// NewStore connects (lazily, as the driver does) to MONGODB_URI, database MONGODB_DB.
func NewStore(c *Contract) (*Store, error) {
	uri := os.Getenv("MONGODB_URI")
	if uri == "" {
		return nil, errors.New("MONGODB_URI is not set")
	}
	timeout := TimeoutFromEnv()
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetAppName("protolab").
		SetServerSelectionTimeout(timeout).SetConnectTimeout(timeout).SetTimeout(timeout))
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", uri, err)
	}
	db := os.Getenv("MONGODB_DB")
	if db == "" {
		db = DefaultDB
	}
	typed := options.Collection().SetBSONOptions(&options.BSONOptions{UseJSONStructTags: true})
	return &Store{Contract: c, client: client, games: client.Database(db).Collection(Collection),
		typed: client.Database(db).Collection(Collection, typed)}, nil
}

// Close disconnects from the database.
func (s *Store) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.client.Disconnect(ctx)
}

// public is a stored document as the contract's Game: "id" first, then the
// fields in their stored order (as store.py's _public).
func public(doc bson.D) bson.D {
	out := make(bson.D, 1, len(doc))
	out[0] = bson.E{Key: "id"}
	for _, e := range doc {
		if e.Key == "_id" {
			out[0].Value = e.Value
		} else {
			out = append(out, e)
		}
	}
	return out
}

// Create validates the game and stores it under a new ObjectId hex.
func (s *Store) Create(ctx context.Context, game any) (bson.D, error) {
	fields, err := s.Contract.CheckGame(game)
	if err != nil {
		return nil, err
	}
	doc := append(bson.D{{Key: "_id", Value: bson.NewObjectID().Hex()}}, fields...)
	if _, err := s.games.InsertOne(ctx, doc); err != nil {
		return nil, databaseError(err)
	}
	return public(doc), nil
}

// Get returns one game.
func (s *Store) Get(ctx context.Context, id any) (bson.D, error) {
	gameID, err := s.Contract.CheckID(id)
	if err != nil {
		return nil, err
	}
	var doc bson.D
	if err := s.games.FindOne(ctx, bson.D{{Key: "_id", Value: gameID}}).Decode(&doc); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil, Errorf(NotFound, "no game with id %s", pyRepr(gameID))
		}
		return nil, databaseError(err)
	}
	return public(doc), nil
}

// List returns a page of games in id order.
func (s *Store) List(ctx context.Context, limit, offset int64) ([]bson.D, error) {
	if err := s.Contract.CheckPage(limit, offset); err != nil {
		return nil, err
	}
	cursor, err := s.games.Find(ctx, bson.D{},
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetSkip(offset).SetLimit(limit))
	if err != nil {
		return nil, databaseError(err)
	}
	docs := make([]bson.D, 0, limit)
	if err := cursor.All(ctx, &docs); err != nil {
		return nil, databaseError(err)
	}
	for i, doc := range docs {
		docs[i] = public(doc)
	}
	return docs, nil
}

// GetInto is Get decoding the stored game straight into dst, a pointer to a
// struct whose bson or json tags name the stored keys ("_id" the id): no
// generic bson.D to walk and convert afterwards (the profile of go_grpc's
// fetch-100 put half its CPU there, profiling/). The same checks and errors as Get.
func (s *Store) GetInto(ctx context.Context, id any, dst any) error {
	gameID, err := s.Contract.CheckID(id)
	if err != nil {
		return err
	}
	if err := s.typed.FindOne(ctx, bson.D{{Key: "_id", Value: gameID}}).Decode(dst); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return Errorf(NotFound, "no game with id %s", pyRepr(gameID))
		}
		return databaseError(err)
	}
	return nil
}

// ListInto is List decoding the page straight into dst, a pointer to a slice
// of such structs (or of pointers to them).
func (s *Store) ListInto(ctx context.Context, limit, offset int64, dst any) error {
	if err := s.Contract.CheckPage(limit, offset); err != nil {
		return err
	}
	cursor, err := s.typed.Find(ctx, bson.D{},
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetSkip(offset).SetLimit(limit))
	if err != nil {
		return databaseError(err)
	}
	if err := cursor.All(ctx, dst); err != nil {
		return databaseError(err)
	}
	return nil
}

// Update replaces a game's fields.
func (s *Store) Update(ctx context.Context, id any, game any) (bson.D, error) {
	gameID, err := s.Contract.CheckID(id)
	if err != nil {
		return nil, err
	}
	fields, err := s.Contract.CheckGame(game)
	if err != nil {
		return nil, err
	}
	result, err := s.games.ReplaceOne(ctx, bson.D{{Key: "_id", Value: gameID}}, fields)
	if err != nil {
		return nil, databaseError(err)
	}
	if result.MatchedCount == 0 {
		return nil, Errorf(NotFound, "no game with id %s", pyRepr(gameID))
	}
	return append(bson.D{{Key: "id", Value: gameID}}, fields...), nil
}

// Delete removes a game.
func (s *Store) Delete(ctx context.Context, id any) error {
	gameID, err := s.Contract.CheckID(id)
	if err != nil {
		return err
	}
	result, err := s.games.DeleteOne(ctx, bson.D{{Key: "_id", Value: gameID}})
	if err != nil {
		return databaseError(err)
	}
	if result.DeletedCount == 0 {
		return Errorf(NotFound, "no game with id %s", pyRepr(gameID))
	}
	return nil
}

// Health pings the database.
func (s *Store) Health(ctx context.Context) error {
	if err := s.client.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
		return databaseError(err)
	}
	return nil
}

// databaseError turns a lost, unreachable or silent database into the
// contract's UNAVAILABLE (as store.py maps pymongo's ConnectionFailure,
// timeouts included); anything else is a server bug, INTERNAL.
func databaseError(err error) error {
	var selection topology.ServerSelectionError
	if mongo.IsNetworkError(err) || mongo.IsTimeout(err) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, mongo.ErrClientDisconnected) || errors.As(err, &selection) {
		return Errorf(Unavailable, "database unavailable: %v", err)
	}
	return Errorf(Internal, "database error: %v", err)
}
