// push-client: the lab's load client for the push feeds (contract/push.md),
// over Server-Sent Events, over WebSocket (contract/ws-protocol.md), as
// HTTP polling (Pathan's REST client), or over gRPC server streaming
// (contract/games.proto's Subscribe); and Fernando & Engel's echo and
// broadcast tests over a WebSocket message protocol (-mode echo, broadcast;
// -framing ws or socketio: messages.go).
//
//   - sse:  N clients each GET /events?feed=synthetic&batch=B&rate=R and read
//     the stream (HTTP/1.1, one connection each; or -h2: HTTP/2 over
//     cleartext, h2c with prior knowledge, all on one connection).
//   - ws:   N clients each open one WebSocket to {url}/ws and send
//     {"request_id": 1, "op": "subscribe", "params": {"feed": "synthetic",
//     "batch": B, "rate": R}}; the reply opens the subscription, then every
//     message without a request_id is a pushed message.
//   - poll: N clients each GET /events?feed=synthetic&count=1&rate=0 in a
//     loop, one request outstanding, kept-alive HTTP/1.1: every answer is one
//     message stamped in the request's handler (Pathan's REST polling).
//   - grpc: N clients each call Subscribe (contract/games.proto, a server
//     stream) with {feed: "synthetic", batch: B, rate: R}, all on one grpc-go
//     ClientConn (one HTTP/2 connection, cleartext; -url is host:port). The
//     response's headers ("subscribed") open the subscription; each message is
//     read as far as the other modes read theirs: protowire finds the first
//     event's sent_ns and counts the events (grpc-go hands over the message's
//     bytes: a codec that does not unmarshal), as the sse and ws modes find
//     the timestamp in the JSON and count its events without parsing it.
//
// Every message's latency is the receive time minus the send timestamp the
// server put in its first event (nanoseconds, same host clock). Raw samples go
// to a CSV (metric_name, timestamp in unix µs, metric_value, status,
// extra_tags; load/rawsamples.py reads it): lab_latency (ms) per message,
// lab_ops (events) per message, lab_connect (ms, request to the subscription's
// opening) per client, lab_errors. A one-line JSON summary goes to stdout.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

type sample struct {
	metric string
	at     int64 // unix µs
	value  float64
	extra  string
}

type run struct {
	ctx     context.Context
	url     string
	batch   int
	rate    int
	client  *http.Client
	conn    *grpc.ClientConn // grpc mode: the one connection every client's stream shares
	h2      bool             // sse: every stream must come in HTTP/2
	sio     bool             // echo, broadcast: socket.io's framing (messages.go)
	payload string           // echo: the payload (JSON)
}

func main() {
	url := flag.String("url", "", "the service's endpoint, e.g. http://127.0.0.1:8000 (ws mode: ws://127.0.0.1:8000/ws)")
	mode := flag.String("mode", "sse", "sse, ws, poll, grpc, echo or broadcast")
	framing := flag.String("framing", "ws", "echo, broadcast: ws (the lab's WebSocket protocol) or socketio")
	payload := flag.String("payload", `{"text":"x"}`, "echo: the payload (JSON)")
	broadcasts := flag.Int("broadcasts", 10, "broadcast: how many the sender sends")
	intervalMs := flag.Int("interval-ms", 1000, "broadcast: between them")
	connectSeconds := flag.Float64("connect-seconds", 30, "echo: the time each client has to connect, before "+
		"the warm-up (which starts once every client has connected or given up)")
	clients := flag.Int("clients", 10, "concurrent subscriptions (poll: concurrent polling loops)")
	seconds := flag.Float64("seconds", 10, "the measurement window: how long each client reads after the warm-up")
	warmup := flag.Float64("warmup", 0, "seconds before the window (subscriptions open; not in the summary); "+
		"broadcast: the time allowed for every receiver to connect (0: 30 s)")
	batch := flag.Int("batch", 1, "events per message")
	rate := flag.Int("rate", 1000, "messages per second per subscription (0: unpaced)")
	h2 := flag.Bool("h2", false, "sse: HTTP/2 on one connection shared by all clients: over cleartext (h2c), or "+
		"over TLS chosen by ALPN (h2) with an https:// url")
	ca := flag.String("ca", "", "a PEM CA file: TLS (https://, wss://) verified against it")
	out := flag.String("out", "samples.csv", "raw samples (CSV)")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "push-client: -url is required")
		os.Exit(2)
	}
	var subscribe func(*run) []sample
	switch *mode {
	case "sse":
		subscribe = subscribeSSE
	case "ws":
		subscribe = subscribeWS
	case "poll":
		subscribe = poll
	case "grpc":
		subscribe = subscribeGRPC
	case "echo", "broadcast":
	default:
		fmt.Fprintln(os.Stderr, "push-client: -mode must be sse, ws, poll, grpc, echo or broadcast")
		os.Exit(2)
	}
	if *framing != "ws" && *framing != "socketio" {
		fmt.Fprintln(os.Stderr, "push-client: -framing must be ws or socketio")
		os.Exit(2)
	}
	if !json.Valid([]byte(*payload)) {
		fmt.Fprintln(os.Stderr, "push-client: -payload is not JSON")
		os.Exit(2)
	}
	transport := &http.Transport{MaxIdleConnsPerHost: *clients, DisableCompression: true}
	if *ca != "" {
		pem, err := os.ReadFile(*ca)
		roots := x509.NewCertPool()
		if err != nil || !roots.AppendCertsFromPEM(pem) {
			fmt.Fprintln(os.Stderr, "push-client: -ca: no certificate read from", *ca, err)
			os.Exit(2)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		websocketTLS = transport.TLSClientConfig
	}
	if *mode == "echo" {
		r := &run{url: *url, sio: *framing == "socketio", payload: *payload}
		os.Exit(runEcho(r, *clients, time.Duration(*connectSeconds*float64(time.Second)),
			time.Duration(*warmup*float64(time.Second)), *seconds, *out))
	}
	if *mode == "broadcast" {
		r := &run{url: *url, sio: *framing == "socketio"}
		os.Exit(runBroadcast(r, *clients, *broadcasts, time.Duration(*intervalMs)*time.Millisecond,
			time.Duration(*warmup*float64(time.Second)), *out))
	}
	if *h2 {
		protocols := new(http.Protocols)
		if strings.HasPrefix(*url, "https://") {
			protocols.SetHTTP2(true) // by ALPN; HTTP/1.1 not offered: an answer in it is an error
		} else {
			protocols.SetUnencryptedHTTP2(true)
		}
		transport.Protocols = protocols
	}
	start := time.Now()
	window := start.Add(time.Duration(*warmup * float64(time.Second))).UnixMicro()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration((*warmup+*seconds)*float64(time.Second)))
	defer cancel()
	r := &run{ctx: ctx, url: *url, batch: *batch, rate: *rate, client: &http.Client{Transport: transport},
		sio: *framing == "socketio", payload: *payload, h2: *h2}
	if *mode == "grpc" {
		conn, err := grpc.NewClient(*url, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
		if err != nil {
			fmt.Fprintln(os.Stderr, "push-client:", err)
			os.Exit(2)
		}
		defer conn.Close()
		r.conn = conn
	}
	results := make([][]sample, *clients)
	var wg sync.WaitGroup
	for i := 0; i < *clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = received(subscribe(r))
		}(i)
	}
	wg.Wait()
	if err := write(*out, results); err != nil {
		fmt.Fprintln(os.Stderr, "push-client:", err)
		os.Exit(1)
	}
	summarize(results, *seconds, window, window+int64(*seconds*1e6))
}

// received: a client that got no message and no error in the whole run (its
// subscription or first poll not answered in time) is an error too.
func received(got []sample) []sample {
	for _, s := range got {
		if s.metric == "lab_latency" || s.metric == "lab_errors" {
			return got
		}
	}
	return append(got, sample{"lab_errors", time.Now().UnixMicro(), 1, "kind=no_message"})
}

// websocketTLS: the -ca's configuration for wss:// (nil: the system's roots).
var websocketTLS *tls.Config

var reported sync.Map // error kinds already written to stderr

// failure records an error unless the run's end caused it; the first error of
// each kind goes to stderr with its cause.
func failure(ctx context.Context, got []sample, kind string, cause ...error) []sample {
	if deadline, _ := ctx.Deadline(); ctx.Err() != nil || !time.Now().Before(deadline) {
		return got // the run's end (an I/O deadline from ctx can fire a moment before ctx.Err is set)
	}
	if _, seen := reported.LoadOrStore(kind, true); !seen && len(cause) > 0 && cause[0] != nil {
		fmt.Fprintf(os.Stderr, "push-client: %s: %v\n", kind, cause[0])
	}
	return append(got, sample{"lab_errors", time.Now().UnixMicro(), 1, "kind=" + kind})
}

// stamped: a message's samples from its JSON array of events ("[[<ns>,...],...]",
// the bytes from its first "[" on), received at now.
func stamped(got []sample, data []byte, now time.Time) ([]sample, bool) {
	data = bytes.TrimLeft(data, "[ ")
	end := 0
	for end < len(data) && data[end] >= '0' && data[end] <= '9' {
		end++
	}
	sent, err := strconv.ParseInt(string(data[:end]), 10, 64)
	if end == 0 || err != nil {
		return got, false
	}
	events := bytes.Count(data, []byte("],[")) + bytes.Count(data, []byte("], [")) + 1
	return received1(got, sent, events, now), true
}

// received1: a message's samples, its events sent at `sent` (unix ns) and received at now.
func received1(got []sample, sent int64, events int, now time.Time) []sample {
	return append(got,
		sample{"lab_latency", now.UnixMicro(), float64(now.UnixNano()-sent) / 1e6, ""},
		sample{"lab_ops", now.UnixMicro(), float64(events), ""})
}

func subscribeSSE(r *run) []sample {
	var got []sample
	start := time.Now()
	query := fmt.Sprintf("%s/events?feed=synthetic&batch=%d&rate=%d", r.url, r.batch, r.rate)
	request, err := http.NewRequestWithContext(r.ctx, "GET", query, nil)
	if err != nil {
		return failure(r.ctx, got, "request", err)
	}
	request.Header.Set("Accept", "text/event-stream")
	response, err := r.client.Do(request)
	if err != nil {
		return failure(r.ctx, got, "connect", err)
	}
	defer response.Body.Close()
	if response.StatusCode != 200 {
		return failure(r.ctx, got, "status_"+strconv.Itoa(response.StatusCode))
	}
	if r.h2 && response.ProtoMajor != 2 {
		return failure(r.ctx, got, "not_http2", fmt.Errorf("answered in %s", response.Proto))
	}
	reader := bufio.NewReaderSize(response.Body, 1<<16) // longer lines: readLine reads on
	for {
		line, err := readLine(reader)
		if err != nil {
			return failure(r.ctx, got, "read", err)
		}
		now := time.Now()
		if bytes.HasPrefix(line, []byte(": subscribed")) {
			got = append(got, sample{"lab_connect", now.UnixMicro(), float64(now.Sub(start).Nanoseconds()) / 1e6, ""})
			continue
		}
		if !bytes.HasPrefix(line, []byte("data: [")) {
			continue
		}
		var ok bool
		if got, ok = stamped(got, line[len("data: "):], now); !ok {
			return failure(r.ctx, got, "payload")
		}
	}
}

func readLine(reader *bufio.Reader) ([]byte, error) {
	line, err := reader.ReadSlice('\n')
	if err == bufio.ErrBufferFull { // a data line longer than the buffer: read on
		rest, err2 := reader.ReadBytes('\n')
		return append(append([]byte{}, line...), rest...), err2
	}
	return line, err
}

func subscribeWS(r *run) []sample {
	var got []sample
	start := time.Now()
	dialer := websocket.Dialer{HandshakeTimeout: 15 * time.Second, ReadBufferSize: 1 << 16,
		TLSClientConfig: websocketTLS}
	conn, response, err := dialer.DialContext(r.ctx, r.url, nil)
	if err != nil {
		if response != nil {
			return failure(r.ctx, got, "status_"+strconv.Itoa(response.StatusCode))
		}
		return failure(r.ctx, got, "connect", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(r.ctx, func() { conn.Close() }) // the run's end unblocks the read
	defer stop()
	subscribe := fmt.Sprintf(`{"request_id": 1, "op": "subscribe", "params": {"feed": "synthetic", "batch": %d, "rate": %d}}`,
		r.batch, r.rate)
	if err := conn.WriteMessage(websocket.TextMessage, []byte(subscribe)); err != nil {
		return failure(r.ctx, got, "write", err)
	}
	var message bytes.Buffer
	for {
		_, frame, err := conn.NextReader()
		if err == nil {
			message.Reset()
			_, err = message.ReadFrom(frame)
		}
		if err != nil {
			return failure(r.ctx, got, "read", err)
		}
		now := time.Now()
		body := message.Bytes()
		switch event := eventOf(body); {
		case event == "synthetic":
			data := bytes.Index(body, []byte(`"data"`))
			first := -1
			if data >= 0 {
				first = bytes.IndexByte(body[data:], '[')
			}
			var ok bool
			if first >= 0 {
				got, ok = stamped(got, body[data+first:], now)
			}
			if !ok {
				return failure(r.ctx, got, "payload")
			}
		case event == "broadcast": // another client's broadcast: not this feed's
		case event != "":
			return failure(r.ctx, got, "event_"+event) // end or error: the feed stopped
		default: // a reply: the subscription's
			var reply struct {
				Result json.RawMessage        `json:"result"`
				Error  *struct{ Code string } `json:"error"`
			}
			if json.Unmarshal(body, &reply) != nil || reply.Error != nil || reply.Result == nil {
				return failure(r.ctx, got, "subscribe")
			}
			got = append(got, sample{"lab_connect", now.UnixMicro(), float64(now.Sub(start).Nanoseconds()) / 1e6, ""})
		}
	}
}

// eventOf: a pushed message's "event" ("" for a reply, which has none).
func eventOf(body []byte) string {
	at := bytes.Index(body, []byte(`"event"`))
	if at < 0 {
		return ""
	}
	rest := bytes.TrimLeft(body[at+len(`"event"`):], ": ")
	if len(rest) == 0 || rest[0] != '"' {
		return "?"
	}
	end := bytes.IndexByte(rest[1:], '"')
	if end < 0 {
		return "?"
	}
	return string(rest[1 : 1+end])
}

// The .proto's field numbers (contract/games.proto) the grpc mode reads and writes.
const (
	subscribeMethod = "/protolab.games.v1.Games/Subscribe"
	requestFeed     = 1 // SubscribeRequest.feed
	requestBatch    = 2 // SubscribeRequest.batch
	requestRate     = 3 // SubscribeRequest.rate
	messageEvents   = 2 // PushMessage.events
	eventSentNs     = 1 // SyntheticEvent.sent_ns
)

// rawCodec hands grpc-go's messages over as bytes: the request as built here,
// the reply as received (the mode reads it with protowire).
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func subscribeGRPC(r *run) []sample {
	var got []sample
	start := time.Now()
	request := protowire.AppendTag(nil, requestFeed, protowire.BytesType)
	request = protowire.AppendString(request, "synthetic")
	request = protowire.AppendTag(request, requestBatch, protowire.VarintType)
	request = protowire.AppendVarint(request, uint64(int64(r.batch)))
	request = protowire.AppendTag(request, requestRate, protowire.VarintType)
	request = protowire.AppendVarint(request, uint64(int64(r.rate)))
	stream, err := r.conn.NewStream(r.ctx, &grpc.StreamDesc{ServerStreams: true}, subscribeMethod)
	if err != nil {
		return failure(r.ctx, got, "connect", err)
	}
	if err := stream.SendMsg(&request); err != nil {
		return failure(r.ctx, got, "write", err)
	}
	if err := stream.CloseSend(); err != nil {
		return failure(r.ctx, got, "write", err)
	}
	var message []byte
	header, err := stream.Header()
	if err == nil && len(header.Get("subscribed")) == 0 {
		err = stream.RecvMsg(&message) // no headers: a refused call; its status
	}
	if err != nil {
		return failure(r.ctx, got, "status_"+status.Code(err).String(), err)
	}
	now := time.Now()
	got = append(got, sample{"lab_connect", now.UnixMicro(), float64(now.Sub(start).Nanoseconds()) / 1e6, ""})
	for {
		if err := stream.RecvMsg(&message); err != nil {
			if err == io.EOF {
				return failure(r.ctx, got, "end") // the feed has no count: an end is the server's doing
			}
			if status.Code(err) == codes.DeadlineExceeded {
				// the stream's only deadline is the run's end (r.ctx, sent as grpc-timeout): the server may
				// answer it a moment before this process's clock passes it (seen under load, grpc-js)
				return got
			}
			return failure(r.ctx, got, "status_"+status.Code(err).String(), err)
		}
		now := time.Now()
		sent, events, ok := protoStamp(message)
		if !ok {
			return failure(r.ctx, got, "payload")
		}
		got = received1(got, sent, events, now)
	}
}

// protoStamp reads a PushMessage: the first event's sent_ns and the number of events.
func protoStamp(message []byte) (sent int64, events int, ok bool) {
	for len(message) > 0 {
		number, kind, n := protowire.ConsumeTag(message)
		if n < 0 {
			return 0, 0, false
		}
		message = message[n:]
		if number == messageEvents && kind == protowire.BytesType {
			event, m := protowire.ConsumeBytes(message)
			if m < 0 {
				return 0, 0, false
			}
			if events == 0 {
				if sent, ok = eventStamp(event); !ok {
					return 0, 0, false
				}
			}
			events++
			message = message[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(number, kind, message)
		if m < 0 {
			return 0, 0, false
		}
		message = message[m:]
	}
	return sent, events, events > 0
}

func eventStamp(event []byte) (int64, bool) {
	for len(event) > 0 {
		number, kind, n := protowire.ConsumeTag(event)
		if n < 0 {
			return 0, false
		}
		event = event[n:]
		if number == eventSentNs && kind == protowire.VarintType {
			v, m := protowire.ConsumeVarint(event)
			return int64(v), m > 0
		}
		m := protowire.ConsumeFieldValue(number, kind, event)
		if m < 0 {
			return 0, false
		}
		event = event[m:]
	}
	return 0, false
}

func poll(r *run) []sample {
	var got []sample
	query := r.url + "/events?feed=synthetic&count=1&rate=0"
	for r.ctx.Err() == nil {
		request, err := http.NewRequestWithContext(r.ctx, "GET", query, nil)
		if err != nil {
			return failure(r.ctx, got, "request", err)
		}
		response, err := r.client.Do(request)
		if err != nil {
			return failure(r.ctx, got, "connect", err)
		}
		if response.StatusCode != 200 {
			response.Body.Close()
			return failure(r.ctx, got, "status_"+strconv.Itoa(response.StatusCode))
		}
		reader := bufio.NewReader(response.Body)
		seen := false
		for {
			line, err := readLine(reader)
			if err == io.EOF {
				break
			}
			if err != nil {
				response.Body.Close()
				return failure(r.ctx, got, "read", err)
			}
			if bytes.HasPrefix(line, []byte("data: [")) {
				var ok bool
				if got, ok = stamped(got, line[len("data: "):], time.Now()); !ok {
					response.Body.Close()
					return failure(r.ctx, got, "payload")
				}
				seen = true
			}
		}
		response.Body.Close() // read to its end: the connection is kept alive
		if !seen {
			got = failure(r.ctx, got, "empty")
		}
	}
	return got
}

func write(path string, results [][]sample) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := csv.NewWriter(bufio.NewWriterSize(f, 1<<20))
	w.Write([]string{"metric_name", "timestamp", "metric_value", "status", "extra_tags"})
	for _, samples := range results {
		for _, s := range samples {
			w.Write([]string{s.metric, strconv.FormatInt(s.at, 10), strconv.FormatFloat(s.value, 'f', -1, 64), "", s.extra})
		}
	}
	w.Flush()
	return w.Error()
}

// summarize prints one JSON line: messages and events received in the window
// [start, end) (unix µs; a message read after end is not counted: the run's
// deadline closes the connection a moment late on a busy machine, and what
// arrives meanwhile is past the window), events per second of the window,
// their latency in ms (mean, standard deviation, percentiles), clients that
// got at least one message, errors by kind over the whole run (the raw CSV,
// warm-up included, is the record).
func summarize(results [][]sample, seconds float64, start, end int64) {
	var latencies, connects []float64
	events := 0.0
	errors := map[string]int{}
	receiving := 0
	for _, samples := range results {
		got := false
		for _, s := range samples {
			inside := start <= s.at && s.at < end
			switch {
			case s.metric == "lab_latency":
				got = true
				if inside {
					latencies = append(latencies, s.value)
				}
			case s.metric == "lab_ops" && inside:
				events += s.value
			case s.metric == "lab_connect":
				connects = append(connects, s.value)
			case s.metric == "lab_errors":
				errors[strings.TrimPrefix(s.extra, "kind=")]++
			}
		}
		if got {
			receiving++
		}
	}
	sort.Float64s(latencies)
	q := func(p float64) float64 {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))]
	}
	mean, sd := 0.0, 0.0
	for _, v := range latencies {
		mean += v
	}
	if len(latencies) > 0 {
		mean /= float64(len(latencies))
		for _, v := range latencies {
			sd += (v - mean) * (v - mean)
		}
		if len(latencies) > 1 {
			sd = math.Sqrt(sd / float64(len(latencies)-1))
		}
	}
	total := 0
	for _, n := range errors {
		total += n
	}
	kinds, _ := json.Marshal(errors)
	connect, _ := json.Marshal(describe(connects))
	fmt.Printf("{\"messages\": %d, \"events\": %.0f, \"events_per_s\": %.1f, \"receiving_clients\": %d, "+
		"\"errors\": %d, \"errors_by_kind\": %s, \"latency_ms\": {\"mean\": %.3f, \"sd\": %.3f, \"p50\": %.3f, "+
		"\"p95\": %.3f, \"p99\": %.3f, \"max\": %.3f}, \"window_start_us\": %d, \"window_end_us\": %d, \"connect_ms\": %s}\n",
		len(latencies), events, events/seconds, receiving, total, kinds, mean, sd, q(0.5), q(0.95), q(0.99), q(1),
		start, end, connect)
}
