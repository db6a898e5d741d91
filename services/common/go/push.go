package common

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The push contract (contract/push.md): the feeds `changes` (the games
// collection's change stream) and `synthetic` (Timeplus's event, paced),
// the same over SSE and WebSocket. Limits and the synthetic event are data
// in contract.json "push".

// Push is contract.json's "push" section.
type Push struct {
	Feeds           []string                  `json:"feeds"`
	SyntheticParams map[string]PushParamRange `json:"synthetic_params"`
	SyntheticEvent  []json.RawMessage         `json:"synthetic_event"`
	TimestampField  int                       `json:"synthetic_event_timestamp_field"`
	KeepaliveSecs   int                       `json:"keepalive_seconds"`
	SSEPath         string                    `json:"sse_path"`
}

// PushParamRange is a synthetic parameter's range and default.
type PushParamRange struct {
	Min     int64 `json:"min"`
	Max     int64 `json:"max"`
	Default int64 `json:"default"`
}

// LoadPush reads the push section of the contract (LAB_CONTRACT).
func LoadPush() (*Push, error) {
	path := os.Getenv("LAB_CONTRACT")
	if path == "" {
		path = "contract/contract.json"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Push *Push `json:"push"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	if raw.Push == nil || len(raw.Push.SyntheticEvent) == 0 {
		return nil, errors.New("contract.json has no push section")
	}
	return raw.Push, nil
}

// Subscription is a checked subscription to one feed.
type Subscription struct {
	Feed               string
	Batch, Rate, Count int64
	After              int64  // synthetic: the last message id the client has (0: none)
	ResumeToken        string // changes: resume after this token ("" = from now)
	HasLastEventID     bool
	synthetic          *Push
	eventTail          []byte
}

// Subscribe checks a subscription: its feed, its parameters (JSON integers
// or, over SSE, decimal strings), and the id it resumes after.
func (p *Push) Subscribe(feed any, params map[string]any, lastEventID *string) (*Subscription, error) {
	name, _ := feed.(string)
	known := false
	for _, f := range p.Feeds {
		known = known || f == name
	}
	if !known {
		return nil, Errorf(InvalidArgument, "unknown feed %s: expected one of %v", pyRepr(feed), p.Feeds)
	}
	s := &Subscription{Feed: name, synthetic: p}
	if name == "changes" {
		for key := range params {
			return nil, Errorf(InvalidArgument, "unknown parameter %s for feed changes", pyRepr(key))
		}
		if lastEventID != nil {
			if *lastEventID == "" {
				return nil, Errorf(InvalidArgument, "last event id: not a resume token")
			}
			s.ResumeToken, s.HasLastEventID = *lastEventID, true
		}
		return s, nil
	}
	for key := range params {
		if _, ok := p.SyntheticParams[key]; !ok {
			return nil, Errorf(InvalidArgument, "unknown parameter %s for feed synthetic", pyRepr(key))
		}
	}
	value := func(key string) (int64, error) {
		bounds := p.SyntheticParams[key]
		raw, present := params[key]
		if !present {
			return bounds.Default, nil
		}
		if text, isText := raw.(string); isText && text != "" && isDecimal(text) {
			raw = json.Number(text)
		}
		n, ok := Integer(raw)
		if !ok || n < bounds.Min || n > bounds.Max {
			return 0, Errorf(InvalidArgument, "invalid %s %s: expected an integer %d..%d", key, pyRepr(raw), bounds.Min, bounds.Max)
		}
		return n, nil
	}
	var err error
	if s.Batch, err = value("batch"); err != nil {
		return nil, err
	}
	if s.Rate, err = value("rate"); err != nil {
		return nil, err
	}
	if s.Count, err = value("count"); err != nil {
		return nil, err
	}
	if lastEventID != nil {
		limit := s.Count
		if limit == 0 { // an endless feed: any id up to the largest count
			limit = p.SyntheticParams["count"].Max
		}
		n, err := strconv.ParseInt(*lastEventID, 10, 64)
		if !isDecimal(*lastEventID) || err != nil || n > limit {
			return nil, Errorf(InvalidArgument, "last event id %s: expected a decimal integer 0..%d", pyRepr(*lastEventID), limit)
		}
		s.After, s.HasLastEventID = n, true
	}
	// An event: [timestamp, fields 1..11]; everything after the timestamp is fixed.
	tail := []byte{}
	for i, field := range p.SyntheticEvent {
		if i != p.TimestampField {
			tail = append(append(tail, ','), compactJSON(field)...)
		}
	}
	s.eventTail = append(tail, ']')
	return s, nil
}

func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func compactJSON(raw json.RawMessage) []byte {
	v, err := DecodeJSON(raw)
	if err != nil {
		return raw
	}
	if n, ok := v.(json.Number); ok {
		return []byte(n) // a number as written in the contract (116.9232297)
	}
	return AppendJSON(nil, v)
}

// PushSender receives a feed's messages: id and the message's JSON.
type PushSender func(id string, data []byte) error

// Stream is an open subscription: Run sends its messages until the feed
// ends (returning how many it sent), ctx is done, or sending fails.
type Stream struct {
	sub     *Subscription
	changes *mongo.ChangeStream
	store   *Store
}

// Open opens the subscription's feed (for changes, the change stream, so a
// change made once Open returns is delivered).
func (s *Subscription) Open(ctx context.Context, store *Store) (*Stream, error) {
	stream := &Stream{sub: s, store: store}
	if s.Feed != "changes" {
		return stream, nil
	}
	opts := options.ChangeStream().SetFullDocument(options.UpdateLookup)
	if s.HasLastEventID {
		opts.SetResumeAfter(bson.D{{Key: "_data", Value: s.ResumeToken}})
	}
	changes, err := store.games.Watch(ctx, mongo.Pipeline{}, opts)
	if err != nil {
		var server mongo.ServerError
		if s.HasLastEventID && errors.As(err, &server) && !mongo.IsNetworkError(err) {
			return nil, Errorf(InvalidArgument, "last event id: cannot resume from it: %v", err)
		}
		return nil, Errorf(Unavailable, "cannot open a change stream: %v", err)
	}
	stream.changes = changes
	return stream, nil
}

// Close releases the change stream, if any.
func (st *Stream) Close() {
	if st.changes != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = st.changes.Close(ctx)
	}
}

// Run sends the feed's messages. It returns the number sent when a bounded
// feed ends (ended true), or the error that stopped it: a contract error
// for the client, or ctx's / the sender's error.
func (st *Stream) Run(ctx context.Context, send PushSender) (sent int64, ended bool, err error) {
	if st.changes != nil {
		return st.runChanges(ctx, send)
	}
	s := st.sub
	buf := make([]byte, 0, 160*s.Batch)
	return st.Paced(ctx, func(k int64) error {
		buf = append(buf[:0], '[')
		stamp := time.Now().UnixNano()
		for i := int64(0); i < s.Batch; i++ {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, '[')
			buf = strconv.AppendInt(buf, stamp, 10)
			buf = append(buf, s.eventTail...)
		}
		buf = append(buf, ']')
		return send(strconv.FormatInt(k, 10), buf)
	})
}

// Paced calls emit(k) for each message k of the synthetic feed when it is due
// (push.md's pacing): emit stamps the message and sends it, in the transport's
// own form. It returns as Run does.
func (st *Stream) Paced(ctx context.Context, emit func(k int64) error) (sent int64, ended bool, err error) {
	s := st.sub
	start := time.Now()
	first := s.After + 1
	for k := first; s.Count == 0 || k <= s.Count; k++ {
		if s.Rate > 0 {
			due := start.Add(time.Duration(float64(k-first) / float64(s.Rate) * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				timer := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					timer.Stop()
					return sent, false, ctx.Err()
				case <-timer.C:
				}
			}
		} else if ctx.Err() != nil {
			return sent, false, ctx.Err()
		}
		if err := emit(k); err != nil {
			return sent, false, err
		}
		sent++
	}
	return sent, true, nil
}

func (st *Stream) runChanges(ctx context.Context, send PushSender) (int64, bool, error) {
	return st.Changes(ctx, func(c Change) error {
		var game any
		if c.Game != nil {
			game = c.Game
		}
		return send(c.Token, MarshalJSON(bson.D{{Key: "type", Value: c.Type}, {Key: "id", Value: c.ID}, {Key: "game", Value: game}}))
	})
}

// Change is one message of the changes feed (push.md): its resume token, its
// type (created, updated, deleted), the game's id, and the game as stored
// after the change, id first as the CRUD operations return it (nil for deleted).
type Change struct {
	Token, Type string
	ID          any
	Game        bson.D
}

// Changes sends the changes feed's messages as Change values (the transport
// frames them); it returns as Run does.
func (st *Stream) Changes(ctx context.Context, send func(Change) error) (int64, bool, error) {
	var sent int64
	for st.changes.Next(ctx) {
		var event struct {
			ID            bson.Raw `bson:"_id"`
			OperationType string   `bson:"operationType"`
			DocumentKey   bson.D   `bson:"documentKey"`
			FullDocument  bson.D   `bson:"fullDocument"`
		}
		if err := st.changes.Decode(&event); err != nil {
			return sent, false, Errorf(Internal, "decoding a change: %v", err)
		}
		token, _ := event.ID.Lookup("_data").StringValueOK()
		var id any
		for _, e := range event.DocumentKey {
			if e.Key == "_id" {
				id = e.Value
			}
		}
		kind := map[string]string{"insert": "created", "replace": "updated", "update": "updated", "delete": "deleted"}[event.OperationType]
		if kind == "" {
			return sent, false, Errorf(Unavailable, "the change stream ended: %s", event.OperationType)
		}
		var game bson.D
		if kind != "deleted" && event.FullDocument != nil {
			game = public(event.FullDocument)
		}
		if err := send(Change{Token: token, Type: kind, ID: id, Game: game}); err != nil {
			return sent, false, err
		}
		sent++
	}
	if ctx.Err() != nil {
		return sent, false, ctx.Err()
	}
	return sent, false, Errorf(Unavailable, "the change stream failed: %v", st.changes.Err())
}

// ErrorData is a contract error as a push error message's data.
func ErrorData(err error) []byte {
	e := AsError(err)
	return MarshalJSON(bson.D{{Key: "code", Value: e.Code}, {Key: "message", Value: e.Message}})
}

// EndData is the end message's data.
func EndData(sent int64) []byte { return []byte(fmt.Sprintf(`{"sent":%d}`, sent)) }
