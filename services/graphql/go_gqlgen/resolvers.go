package main

import (
	"context"
	"reflect"
	"strings"

	"github.com/vektah/gqlparser/v2/gqlerror"
	"go.mongodb.org/mongo-driver/v2/bson"

	common "protolab/services/common/go"
	"protolab/services/graphql/go_gqlgen/generated"
	"protolab/services/graphql/go_gqlgen/model"
)

// resolver implements the schema's Query and Mutation over the store.
type resolver struct{ store *common.Store }

func (r *resolver) Query() generated.QueryResolver       { return (*query)(r) }
func (r *resolver) Mutation() generated.MutationResolver { return (*mutation)(r) }

type query resolver
type mutation resolver

// contractError is a store error as a GraphQL error with extensions.code.
func contractError(err error) error {
	e := common.AsError(err)
	return &gqlerror.Error{Message: e.Message, Extensions: map[string]any{"code": e.Code}}
}

// stored is a stored game decoded straight into the generated model (its
// json tags are the stored keys; the store's typed collection reads them).
type stored struct {
	ID          string `bson:"_id"`
	*model.Game `bson:",inline"`
}

func (g stored) model() *model.Game {
	g.Game.ID = g.ID
	return g.Game
}

func (q *query) Game(ctx context.Context, id string) (*model.Game, error) {
	var game stored
	if err := q.store.GetInto(ctx, id, &game); err != nil {
		return nil, contractError(err)
	}
	return game.model(), nil
}

func (q *query) Games(ctx context.Context, limit *int, offset *int) ([]*model.Game, error) {
	if limit == nil || offset == nil { // an explicit null
		return nil, contractError(common.Errorf(common.InvalidArgument, "limit and offset must be integers"))
	}
	var docs []stored // cursor.All sizes it to the page
	if err := q.store.ListInto(ctx, int64(*limit), int64(*offset), &docs); err != nil {
		return nil, contractError(err)
	}
	games := make([]*model.Game, len(docs))
	for i, doc := range docs {
		games[i] = doc.model()
	}
	return games, nil
}

func (q *query) Health(ctx context.Context) (bool, error) {
	if err := q.store.Health(ctx); err != nil {
		return false, contractError(err)
	}
	return true, nil
}

func (m *mutation) CreateGame(ctx context.Context, game model.GameInput) (*model.Game, error) {
	doc, err := m.store.Create(ctx, plain(reflect.ValueOf(game)))
	if err != nil {
		return nil, contractError(err)
	}
	return gameOf(doc), nil
}

func (m *mutation) UpdateGame(ctx context.Context, id string, game model.GameInput) (*model.Game, error) {
	doc, err := m.store.Update(ctx, id, plain(reflect.ValueOf(game)))
	if err != nil {
		return nil, contractError(err)
	}
	return gameOf(doc), nil
}

func (m *mutation) DeleteGame(ctx context.Context, id string) (bool, error) {
	if err := m.store.Delete(ctx, id); err != nil {
		return false, contractError(err)
	}
	return true, nil
}

// plain is a generated input model as the plain JSON values the store
// validates (objects keyed by their json tags; a nil pointer is null).
func plain(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return plain(v.Elem())
	case reflect.Struct:
		obj := make(map[string]any, v.NumField())
		for i := 0; i < v.NumField(); i++ {
			obj[jsonName(v.Type().Field(i))] = plain(v.Field(i))
		}
		return obj
	case reflect.Slice:
		list := make([]any, v.Len())
		for i := range list {
			list[i] = plain(v.Index(i))
		}
		return list
	}
	return v.Interface()
}

// gameOf fills the generated Game model from a stored game.
func gameOf(doc bson.D) *model.Game {
	game := &model.Game{}
	fill(reflect.ValueOf(game).Elem(), doc)
	return game
}

func fill(dst reflect.Value, v any) {
	switch dst.Kind() {
	case reflect.Pointer:
		if v == nil {
			return
		}
		dst.Set(reflect.New(dst.Type().Elem()))
		fill(dst.Elem(), v)
	case reflect.Struct:
		doc, _ := v.(bson.D)
		fields := fieldIndex(dst.Type())
		for _, e := range doc {
			if i, ok := fields[e.Key]; ok {
				fill(dst.Field(i), e.Value)
			}
		}
	case reflect.Slice:
		list, _ := v.(bson.A)
		out := reflect.MakeSlice(dst.Type(), len(list), len(list))
		for i, item := range list {
			fill(out.Index(i), item)
		}
		dst.Set(out)
	default:
		if v != nil && reflect.TypeOf(v).AssignableTo(dst.Type()) {
			dst.Set(reflect.ValueOf(v))
		}
	}
}

var fieldIndexes = map[reflect.Type]map[string]int{
	reflect.TypeFor[model.Game]():           indexOf(reflect.TypeFor[model.Game]()),
	reflect.TypeFor[model.LanguageDetail](): indexOf(reflect.TypeFor[model.LanguageDetail]()),
}

func fieldIndex(t reflect.Type) map[string]int {
	if index, ok := fieldIndexes[t]; ok {
		return index
	}
	return indexOf(t)
}

func indexOf(t reflect.Type) map[string]int {
	index := make(map[string]int, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		index[jsonName(t.Field(i))] = i
	}
	return index
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}
