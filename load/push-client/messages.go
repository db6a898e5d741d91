// The echo and broadcast modes: Fernando & Engel's two tests over a
// request/reply message protocol on a WebSocket, in one of two framings (-framing):
//
//   - ws:       the lab's WebSocket protocol (contract/ws-protocol.md) at {url}
//     (ws://host:port/ws): {"request_id": N, "op": ..., "params": ...}, the
//     reply carries request_id back; a pushed message has none.
//   - socketio: socket.io 5 over Engine.IO 4's WebSocket transport
//     (contract/socketio-protocol.md) at {url}?EIO=4&transport=websocket, url
//     being the manifest's http://host:port/socket.io/: after Engine.IO's open
//     packet the client joins the namespace "/" ("40"), emits the event "call"
//     with an ack id (42N["call",{...}]) and reads the ack (43N[{...}]); a push
//     is the event "push" (42["push",{...}]); Engine.IO's ping ("2") is
//     answered ("3").
//
// echo: every client connects (lab_connect: from dialling to the first moment
// it may send: the WebSocket handshake, and for socket.io the namespace's
// answer; each within -connect-seconds), and once all have, each sends
// {"op": "echo", "params": {"payload": P}} and waits for its reply, again and
// again (a closed loop, one message outstanding) for -warmup then -seconds:
// lab_latency is each round trip (ms), lab_ops one per reply. The line
// "window" goes to stdout as the window opens.
//
// broadcast: -clients receivers connect; once every one has (or -warmup
// seconds have passed) one more client, the sender, sends -broadcasts
// broadcasts -interval-ms apart, each {"op": "broadcast", "params":
// {"payload": {"sent_us": <unix µs>, "n": <its number>}}} (µs: a JSON integer a
// JavaScript server keeps exact), and reads its reply's "delivered"; each
// receiver records receive time - sent_us (lab_latency, extra n=<number>).
// Its summary: per broadcast the receivers it was delivered to and received
// by, the delivery span (send to the last receipt) and the CPU this process
// used meanwhile (getrusage at the send and at the last receipt), which says
// whether the receivers kept up. (Until 2026-12-03 the CPU ran to the next
// send, so what the process did after the last receipt, its garbage
// collection of the burst among it, counted as the receivers' work.)
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

// msgConn is one client's connection in either framing.
type msgConn struct {
	c    *websocket.Conn
	sio  bool
	next int
}

// reply is a request's answer: its id and its result or error.
type reply struct {
	id     int
	result json.RawMessage
	code   string
}

var errNoNamespace = errors.New("socket.io: the namespace did not answer the connect packet")

func messagingURL(url string, sio bool) string {
	if !sio {
		return url
	}
	url = strings.Replace(strings.Replace(url, "https://", "wss://", 1), "http://", "ws://", 1)
	if !strings.HasSuffix(url, "/") {
		url += "/"
	}
	return url + "?EIO=4&transport=websocket"
}

// dialMessaging connects and, for socket.io, reads the open packet and joins "/".
func dialMessaging(ctx context.Context, url string, sio bool) (*msgConn, error) {
	dialer := websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 1 << 14,
		TLSClientConfig: websocketTLS}
	c, response, err := dialer.DialContext(ctx, messagingURL(url, sio), nil)
	if err != nil {
		if response != nil {
			return nil, fmt.Errorf("status %d: %w", response.StatusCode, err)
		}
		return nil, err
	}
	m := &msgConn{c: c, sio: sio}
	if !sio {
		return m, nil
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	_, open, err := c.ReadMessage()
	if err != nil || len(open) == 0 || open[0] != '0' {
		c.Close()
		return nil, fmt.Errorf("engine.io open packet: %q %v", open, err)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte("40")); err != nil {
		c.Close()
		return nil, err
	}
	for {
		_, packet, err := c.ReadMessage()
		if err != nil {
			c.Close()
			return nil, err
		}
		switch {
		case bytes.HasPrefix(packet, []byte("40")):
			return m, nil
		case bytes.Equal(packet, []byte("2")):
			if err := c.WriteMessage(websocket.TextMessage, []byte("3")); err != nil {
				c.Close()
				return nil, err
			}
		default:
			c.Close()
			return nil, fmt.Errorf("%w: %q", errNoNamespace, packet)
		}
	}
}

func (m *msgConn) close() { m.c.Close() }

// call sends a request (params: JSON) and returns its id.
func (m *msgConn) call(op string, params []byte) (int, error) {
	m.next++
	var message []byte
	if m.sio {
		message = fmt.Appendf(nil, `42%d["call",{"op":%q,"params":%s}]`, m.next, op, params)
	} else {
		message = fmt.Appendf(nil, `{"request_id":%d,"op":%q,"params":%s}`, m.next, op, params)
	}
	return m.next, m.c.WriteMessage(websocket.TextMessage, message)
}

// read returns the next reply, or (nil, push) for a pushed message (its JSON object).
func (m *msgConn) read() (*reply, []byte, error) {
	for {
		_, body, err := m.c.ReadMessage()
		if err != nil {
			return nil, nil, err
		}
		if !m.sio {
			if eventOf(body) != "" {
				return nil, body, nil
			}
			var r struct {
				RequestID int             `json:"request_id"`
				Result    json.RawMessage `json:"result"`
				Error     *struct{ Code string }
			}
			if err := json.Unmarshal(body, &r); err != nil {
				return nil, nil, fmt.Errorf("reply: %w", err)
			}
			return replyOf(r.RequestID, r.Result, r.Error), nil, nil
		}
		switch {
		case bytes.Equal(body, []byte("2")): // Engine.IO ping
			if err := m.c.WriteMessage(websocket.TextMessage, []byte("3")); err != nil {
				return nil, nil, err
			}
		case bytes.HasPrefix(body, []byte(`42["push",`)):
			return nil, bytes.TrimSuffix(body[len(`42["push",`):], []byte("]")), nil
		case bytes.HasPrefix(body, []byte("43")):
			at := bytes.IndexByte(body, '[')
			if at < 0 {
				return nil, nil, fmt.Errorf("ack: %q", body)
			}
			id, err := strconv.Atoi(string(body[2:at]))
			if err != nil {
				return nil, nil, fmt.Errorf("ack id: %q", body)
			}
			var args []struct {
				Result json.RawMessage `json:"result"`
				Error  *struct{ Code string }
			}
			if err := json.Unmarshal(body[at:], &args); err != nil || len(args) != 1 {
				return nil, nil, fmt.Errorf("ack: %q", body)
			}
			return replyOf(id, args[0].Result, args[0].Error), nil, nil
		case bytes.HasPrefix(body, []byte("41")):
			return nil, nil, errors.New("socket.io: disconnected by the server")
		default: // another packet (a ping's probe, an event other than push): not ours
		}
	}
}

func replyOf(id int, result json.RawMessage, e *struct{ Code string }) *reply {
	r := &reply{id: id, result: result}
	if e != nil {
		r.code = e.Code
		if r.code == "" {
			r.code = "error"
		}
	}
	return r
}

// await reads until the reply to id (pushed messages in between are handed to push, if any).
func (m *msgConn) await(id int, push func([]byte, time.Time)) (*reply, error) {
	for {
		r, pushed, err := m.read()
		if err != nil {
			return nil, err
		}
		if r == nil {
			if push != nil {
				push(pushed, time.Now())
			}
			continue
		}
		if r.id == id {
			return r, nil
		}
	}
}

// runEcho is the echo mode: every client connects first (each within connectAllowance), then all
// echo for warmup + seconds; "window" goes to stdout when the window opens (the caller's CPU
// accounts start there), the summary line at the end.
func runEcho(r *run, clients int, connectAllowance, warmup time.Duration, seconds float64, out string) int {
	if connectAllowance <= 0 {
		connectAllowance = 30 * time.Second
	}
	conns := make([]*msgConn, clients)
	results := make([][]sample, clients)
	connecting, stopConnecting := context.WithTimeout(context.Background(), connectAllowance+time.Minute)
	defer stopConnecting()
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			start := time.Now()
			dialCtx, stop := context.WithTimeout(connecting, connectAllowance)
			m, err := dialMessaging(dialCtx, r.url, r.sio)
			stop()
			if err != nil {
				results[i] = failure(connecting, nil, "connect", err)
				return
			}
			now := time.Now()
			results[i] = append(results[i], sample{"lab_connect", now.UnixMicro(), ms(now.Sub(start)), ""})
			conns[i] = m
		}(i)
	}
	wg.Wait() // every client connected or gave up: the echoes start together
	ctx, cancel := context.WithTimeout(context.Background(), warmup+time.Duration(seconds*float64(time.Second)))
	defer cancel()
	r.ctx = ctx
	window := time.Now().Add(warmup)
	for i, m := range conns {
		if m == nil {
			continue
		}
		wg.Add(1)
		go func(i int, m *msgConn) {
			defer wg.Done()
			results[i] = received(echoLoop(r, m, results[i]))
		}(i, m)
	}
	time.Sleep(time.Until(window))
	fmt.Println("window") // before the summary line, whatever the clients did
	wg.Wait()
	if err := write(out, results); err != nil {
		fmt.Fprintln(os.Stderr, "push-client:", err)
		return 1
	}
	summarize(results, seconds, window.UnixMicro(), window.UnixMicro()+int64(seconds*1e6))
	return 0
}

// echoLoop: one connected client's closed loop until the run's end.
func echoLoop(r *run, m *msgConn, got []sample) []sample {
	defer m.close()
	stop := context.AfterFunc(r.ctx, func() { m.close() })
	defer stop()
	params := fmt.Appendf(nil, `{"payload":%s}`, r.payload)
	for r.ctx.Err() == nil {
		sent := time.Now()
		id, err := m.call("echo", params)
		if err != nil {
			return failure(r.ctx, got, "write", err)
		}
		answer, err := m.await(id, nil)
		if err != nil {
			return failure(r.ctx, got, "read", err)
		}
		now := time.Now()
		if answer.code != "" || answer.result == nil {
			return failure(r.ctx, got, "reply_"+answer.code)
		}
		got = append(got, sample{"lab_latency", now.UnixMicro(), ms(now.Sub(sent)), ""},
			sample{"lab_ops", now.UnixMicro(), 1, ""})
	}
	return got
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// cpuNow: this process's CPU time so far (user + system).
func cpuNow() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

type receipt struct {
	n       int
	latency float64 // ms
	at      time.Time
}

type broadcastSent struct {
	N         int     `json:"n"`
	Delivered int     `json:"delivered"`
	Received  int     `json:"received"`
	SpanMs    float64 `json:"span_ms"`
	CPUMs     float64 `json:"cpu_ms"`
	Busy      float64 `json:"client_cpu_percent"`
	sentAt    time.Time
	cpuAt     time.Duration
}

type stats struct {
	Count  int     `json:"count"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Stddev float64 `json:"stddev"`
	Min    float64 `json:"min"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
}

func describe(values []float64) stats {
	if len(values) == 0 {
		return stats{}
	}
	v := append([]float64(nil), values...)
	sort.Float64s(v)
	mean := 0.0
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	sd := 0.0
	if len(v) > 1 {
		for _, x := range v {
			sd += (x - mean) * (x - mean)
		}
		sd = math.Sqrt(sd / float64(len(v)-1))
	}
	at := func(p float64) float64 { return v[min(len(v)-1, int(p*float64(len(v))))] }
	round := func(x float64) float64 { return math.Round(x*1000) / 1000 }
	return stats{len(v), round(mean), round(at(0.5)), round(sd), round(v[0]), round(at(0.99)), round(v[len(v)-1])}
}

// runBroadcast is the broadcast mode: receivers, one sender, and the summary line.
func runBroadcast(r *run, receivers, broadcasts int, interval time.Duration, connectAllowance time.Duration,
	out string) int {
	if connectAllowance <= 0 {
		connectAllowance = 30 * time.Second // -warmup not given: the receivers' time to connect
	}
	// a deadline well past the run's end: an error before it is counted (failure), one after cancel is not
	limit := connectAllowance + time.Duration(broadcasts+2)*interval + time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var ready sync.WaitGroup
	var connected atomic.Int64
	ready.Add(receivers)
	results := make([][]sample, receivers)
	receipts := make([][]receipt, receivers)
	// per broadcast number: its receipts so far, and this process's CPU when the last came in
	receivedOf := make([]atomic.Int64, broadcasts+1)
	lastCPU := make([]atomic.Int64, broadcasts+1)
	var done sync.WaitGroup
	for i := 0; i < receivers; i++ {
		done.Add(1)
		go func(i int) {
			defer done.Done()
			start := time.Now()
			dialCtx, stopDial := context.WithTimeout(ctx, connectAllowance)
			m, err := dialMessaging(dialCtx, r.url, r.sio)
			stopDial()
			if err != nil {
				results[i] = failure(ctx, nil, "connect", err)
				ready.Done()
				return
			}
			defer m.close()
			stop := context.AfterFunc(ctx, func() { m.close() })
			defer stop()
			now := time.Now()
			results[i] = append(results[i], sample{"lab_connect", now.UnixMicro(), ms(now.Sub(start)), ""})
			connected.Add(1)
			ready.Done()
			for {
				_, pushed, err := m.read()
				if err != nil {
					results[i] = failure(ctx, results[i], "read", err)
					return
				}
				now := time.Now()
				if pushed == nil {
					continue // a reply: the receivers send nothing
				}
				var p struct {
					Event string `json:"event"`
					Data  struct {
						SentUs int64 `json:"sent_us"`
						N      int   `json:"n"`
					} `json:"data"`
				}
				if json.Unmarshal(pushed, &p) != nil || p.Event != "broadcast" || p.Data.N == 0 {
					results[i] = failure(ctx, results[i], "payload")
					continue
				}
				latency := float64(now.UnixMicro()-p.Data.SentUs) / 1e3
				receipts[i] = append(receipts[i], receipt{p.Data.N, latency, now})
				// every receiver connected before the first send: the one that makes the count whole is the last
				if p.Data.N < len(receivedOf) && receivedOf[p.Data.N].Add(1) == connected.Load() {
					lastCPU[p.Data.N].Store(int64(cpuNow()))
				}
				results[i] = append(results[i], sample{"lab_latency", now.UnixMicro(), latency,
					"n=" + strconv.Itoa(p.Data.N)})
			}
		}(i)
	}
	ready.Wait() // each receiver connected or gave up (its allowance)
	sender, err := dialMessaging(ctx, r.url, r.sio)
	errorsByKind := map[string]int{}
	var sent []broadcastSent
	if err != nil {
		fmt.Fprintln(os.Stderr, "push-client: the sender:", err)
		errorsByKind["sender_connect"]++
	} else {
		time.Sleep(interval / 4) // the last receivers' registration on the server
		for n := 1; n <= broadcasts; n++ {
			b := broadcastSent{N: n, sentAt: time.Now(), cpuAt: cpuNow()}
			params := fmt.Appendf(nil, `{"payload":{"sent_us":%d,"n":%d}}`, b.sentAt.UnixMicro(), n)
			id, err := sender.call("broadcast", params)
			var answer *reply
			if err == nil {
				answer, err = sender.await(id, nil)
			}
			if err != nil || answer.code != "" {
				fmt.Fprintln(os.Stderr, "push-client: broadcast", n, err, answer)
				errorsByKind["broadcast"]++
				break
			}
			var delivered struct{ Delivered int }
			_ = json.Unmarshal(answer.result, &delivered)
			b.Delivered = delivered.Delivered
			sent = append(sent, b)
			time.Sleep(time.Until(b.sentAt.Add(interval)))
		}
		sender.close()
	}
	end := cpuNow()
	cancel()
	done.Wait()
	// per broadcast: receipts, the delivery span and this process's CPU over [send, last receipt]
	// (over [send, next send) when a receipt never came)
	var latencies, connects []float64
	for i := range receipts {
		for _, s := range results[i] {
			if s.metric == "lab_connect" {
				connects = append(connects, s.value)
			} else if s.metric == "lab_errors" {
				errorsByKind[strings.TrimPrefix(s.extra, "kind=")]++
			}
		}
	}
	lost := 0
	busiest := 0.0
	for k := range sent {
		b := &sent[k]
		last := b.sentAt
		for i := range receipts {
			for _, x := range receipts[i] {
				if x.n == b.N {
					b.Received++
					if x.at.After(last) {
						last = x.at
					}
					if b.Delivered >= int(connected.Load()) {
						latencies = append(latencies, x.latency)
					}
				}
			}
		}
		next := end
		if k+1 < len(sent) {
			next = sent[k+1].cpuAt
		}
		if at := lastCPU[b.N].Load(); at != 0 {
			next = time.Duration(at)
		}
		b.SpanMs = math.Round(ms(last.Sub(b.sentAt))*1000) / 1000
		b.CPUMs = math.Round(ms(next-b.cpuAt)*1000) / 1000
		if b.SpanMs > 0 {
			b.Busy = math.Round(1000*b.CPUMs/b.SpanMs) / 10
		}
		busiest = max(busiest, b.Busy)
		// the server counts every other connection it sent to (other clients' too): ours are the connected ones
		lost += max(0, min(b.Delivered, int(connected.Load()))-b.Received)
	}
	if err := write(out, results); err != nil {
		fmt.Fprintln(os.Stderr, "push-client:", err)
		return 1
	}
	total := 0
	for _, n := range errorsByKind {
		total += n
	}
	summary, _ := json.Marshal(map[string]any{
		"receivers": receivers, "connected": connected.Load(), "broadcasts": sent, "interval_ms": interval.Milliseconds(),
		"latency_ms": describe(latencies), "connect_ms": describe(connects), "lost": lost,
		"errors": total, "errors_by_kind": errorsByKind, "client_cpu_percent": busiest,
		"client_cpu_over": "the send to the last receipt",
	})
	fmt.Println(string(summary))
	return 0
}
