package common

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Echo, broadcast and push subscriptions on a WebSocket connection
// (contract/ws-protocol.md, push.md).

// WSConn is a connection's sending side; Send must be safe for concurrent use.
// A cancelled ctx starts no write; a write under way ends by ctx's deadline,
// never by its cancellation (an unsubscribe cancels a feed's ctx, and a
// message cut off mid-write would end the whole connection).
type WSConn interface {
	Send(ctx context.Context, message []byte) error
}

// WSSession is one open WebSocket connection and its subscriptions.
type WSSession struct {
	h    *WSHandler
	conn WSConn

	mu   sync.Mutex
	subs map[string]*wsSubscription
	// ending: a feed that ended by itself, its end (or error) message not yet
	// sent. It is out of subs (a new subscription to it is taken), and an
	// unsubscribe meanwhile waits for that message, so none follows its reply.
	ending map[string]*wsSubscription
}

type wsSubscription struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// pushTimeout bounds the sending of one pushed message to one connection.
const pushTimeout = 5 * time.Second

// Open registers a new connection (it receives broadcasts from now on).
func (h *WSHandler) Open(conn WSConn) *WSSession {
	s := &WSSession{h: h, conn: conn, subs: map[string]*wsSubscription{}, ending: map[string]*wsSubscription{}}
	h.mu.Lock()
	if h.sessions == nil {
		h.sessions = map[*WSSession]struct{}{}
	}
	h.sessions[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// Close ends the connection's subscriptions and unregisters it.
func (s *WSSession) Close() {
	s.h.mu.Lock()
	delete(s.h.sessions, s)
	s.h.mu.Unlock()
	s.mu.Lock()
	subs := s.subs
	s.subs = map[string]*wsSubscription{}
	s.mu.Unlock()
	for _, sub := range subs {
		sub.cancel()
		<-sub.done
	}
}

// rawPayload is the request's params.payload as sent (compacted), so echo
// and broadcast hand it on unchanged, key order included.
func rawPayload(message []byte) (json.RawMessage, error) {
	var request struct {
		Params struct {
			Payload json.RawMessage `json:"payload"`
		} `json:"params"`
	}
	if err := json.Unmarshal(message, &request); err != nil {
		return nil, Errorf(InvalidArgument, "malformed payload: %v", err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, request.Params.Payload); err != nil {
		return nil, Errorf(InvalidArgument, "malformed payload: %v", err)
	}
	return out.Bytes(), nil
}

// broadcast sends {"event": "broadcast", "data": payload} to every other
// open connection; the number that took it.
func (s *WSSession) broadcast(payload json.RawMessage) bson.D {
	message := append(append([]byte(`{"event":"broadcast","data":`), payload...), '}')
	s.h.mu.RLock()
	others := make([]*WSSession, 0, len(s.h.sessions))
	for other := range s.h.sessions {
		if other != s {
			others = append(others, other)
		}
	}
	s.h.mu.RUnlock()
	delivered := 0
	for _, other := range others {
		ctx, cancel := context.WithTimeout(context.Background(), pushTimeout)
		if other.conn.Send(ctx, message) == nil {
			delivered++
		}
		cancel()
	}
	return bson.D{{Key: "delivered", Value: delivered}}
}

func (s *WSSession) subscribe(ctx context.Context, params map[string]any, after *func()) (any, error) {
	if s.h.Push == nil {
		return nil, Errorf(InvalidArgument, "this server has no push feeds")
	}
	feedParams := map[string]any{}
	var lastEventID *string
	for key, value := range params {
		switch key {
		case "feed":
		case "last_event_id":
			text, ok := value.(string)
			if !ok {
				return nil, Errorf(InvalidArgument, "last_event_id must be a string")
			}
			lastEventID = &text
		default:
			feedParams[key] = value
		}
	}
	sub, err := s.h.Push.Subscribe(params["feed"], feedParams, lastEventID)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	_, taken := s.subs[sub.Feed]
	s.mu.Unlock()
	if taken {
		return nil, Errorf(InvalidArgument, "already subscribed to feed %s", pyRepr(sub.Feed))
	}
	stream, err := sub.Open(ctx, s.h.Store)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	running := &wsSubscription{cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	s.subs[sub.Feed] = running
	s.mu.Unlock()
	*after = func() { go s.run(runCtx, sub.Feed, stream, running) }
	return bson.D{{Key: "feed", Value: sub.Feed}}, nil
}

func (s *WSSession) run(ctx context.Context, feed string, stream *Stream, running *wsSubscription) {
	defer close(running.done)
	defer stream.Close()
	buf := make([]byte, 0, 4096)
	send := func(message []byte) error {
		sendCtx, cancel := context.WithTimeout(ctx, pushTimeout)
		defer cancel()
		return s.conn.Send(sendCtx, message)
	}
	sent, ended, err := stream.Run(ctx, func(id string, data []byte) error {
		buf = append(buf[:0], `{"event":`...)
		buf = AppendString(buf, feed)
		buf = append(buf, `,"id":`...)
		buf = AppendString(buf, id)
		buf = append(buf, `,"data":`...)
		buf = append(append(buf, data...), '}')
		return send(buf)
	})
	if ctx.Err() != nil {
		return // unsubscribed or closed: nothing follows
	}
	s.mu.Lock()
	if s.subs[feed] == running {
		delete(s.subs, feed)
		s.ending[feed] = running
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.ending[feed] == running {
			delete(s.ending, feed)
		}
		s.mu.Unlock()
	}()
	var event string
	var data []byte
	switch {
	case ended:
		event, data = "end", EndData(sent)
	case err != nil:
		if _, isContract := err.(*Error); !isContract {
			return // the connection failed
		}
		event, data = "error", ErrorData(err)
	default:
		return
	}
	message := append([]byte(`{"event":`), AppendString(nil, event)...)
	message = append(append(message, `,"feed":`...), AppendString(nil, feed)...)
	message = append(append(append(message, `,"data":`...), data...), '}')
	_ = send(message)
}

func (s *WSSession) unsubscribe(feed any) error {
	name, _ := feed.(string)
	known := false
	if s.h.Push != nil {
		for _, f := range s.h.Push.Feeds {
			known = known || f == name
		}
	}
	if !known {
		return Errorf(InvalidArgument, "unknown feed %s", pyRepr(feed))
	}
	s.mu.Lock()
	running := s.subs[name]
	delete(s.subs, name)
	ending := s.ending[name]
	s.mu.Unlock()
	if running == nil { // never subscribed, or its feed ended
		if ending != nil {
			<-ending.done // its end message before this reply, not after
		}
		return Errorf(InvalidArgument, "not subscribed to feed %s", pyRepr(name))
	}
	running.cancel()
	<-running.done // no message of the feed follows the reply
	return nil
}
