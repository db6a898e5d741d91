// sse-client: the lab's load client for Server-Sent Events (contract/push.md).
//
// N clients each subscribe to the synthetic feed and read it for a while; every
// message's latency is the receive time minus the send timestamp the server put
// in its first event (nanoseconds, same host clock). Raw samples go to a CSV in
// the load instrument's format (k6's --out csv columns the lab reads, timestamps
// in µs): lab_latency (ms) per message, lab_ops (events) per message,
// lab_connect (ms, request to ': subscribed') per client, lab_errors.
// Standard library only; HTTP/2 over cleartext (h2c, prior knowledge) with -h2.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"
)

type sample struct {
	metric string
	at     int64 // unix µs
	value  float64
	extra  string
}

func main() {
	url := flag.String("url", "", "the SSE service's endpoint, e.g. http://127.0.0.1:8000")
	clients := flag.Int("clients", 10, "concurrent subscriptions")
	seconds := flag.Float64("seconds", 10, "how long each client reads")
	batch := flag.Int("batch", 1, "events per message")
	rate := flag.Int("rate", 1000, "messages per second per subscription (0: unpaced)")
	h2 := flag.Bool("h2", false, "HTTP/2 over cleartext (h2c) on one connection shared by all clients")
	out := flag.String("out", "samples.csv", "raw samples (CSV)")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "sse-client: -url is required")
		os.Exit(2)
	}
	transport := &http.Transport{MaxIdleConnsPerHost: *clients, DisableCompression: true}
	if *h2 {
		protocols := new(http.Protocols)
		protocols.SetUnencryptedHTTP2(true)
		transport.Protocols = protocols
	}
	client := &http.Client{Transport: transport}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*seconds*float64(time.Second)))
	defer cancel()
	query := fmt.Sprintf("%s/events?feed=synthetic&batch=%d&rate=%d", *url, *batch, *rate)
	results := make([][]sample, *clients)
	var wg sync.WaitGroup
	for i := 0; i < *clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = subscribe(ctx, client, query)
		}(i)
	}
	wg.Wait()
	if err := write(*out, results); err != nil {
		fmt.Fprintln(os.Stderr, "sse-client:", err)
		os.Exit(1)
	}
	summarize(results, *seconds)
}

func subscribe(ctx context.Context, client *http.Client, query string) []sample {
	var got []sample
	fail := func(kind string) []sample {
		if ctx.Err() != nil { // the run's end, not an error
			return got
		}
		return append(got, sample{"lab_errors", time.Now().UnixMicro(), 1, "kind=" + kind})
	}
	start := time.Now()
	request, err := http.NewRequestWithContext(ctx, "GET", query, nil)
	if err != nil {
		return fail("request")
	}
	request.Header.Set("Accept", "text/event-stream")
	response, err := client.Do(request)
	if err != nil {
		return fail("connect")
	}
	defer response.Body.Close()
	if response.StatusCode != 200 {
		return fail("status_" + strconv.Itoa(response.StatusCode))
	}
	reader := bufio.NewReaderSize(response.Body, 1<<20)
	prefix := []byte("data: [[")
	for {
		line, err := reader.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // a data line longer than the buffer: read on
			rest, err2 := reader.ReadBytes('\n')
			line, err = append(append([]byte{}, line...), rest...), err2
		}
		if err != nil {
			return fail("read")
		}
		now := time.Now()
		if bytes.HasPrefix(line, []byte(": subscribed")) {
			got = append(got, sample{"lab_connect", now.UnixMicro(), float64(now.Sub(start).Nanoseconds()) / 1e6, ""})
			continue
		}
		if !bytes.HasPrefix(line, prefix) {
			continue
		}
		body := line[len(prefix):]
		comma := bytes.IndexByte(body, ',')
		sent, perr := strconv.ParseInt(string(body[:max(comma, 0)]), 10, 64)
		if comma < 0 || perr != nil {
			return fail("payload")
		}
		events := bytes.Count(body, []byte("],[")) + 1
		got = append(got,
			sample{"lab_latency", now.UnixMicro(), float64(now.UnixNano()-sent) / 1e6, ""},
			sample{"lab_ops", now.UnixMicro(), float64(events), ""})
	}
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

// summarize prints one JSON line: events and messages received, per second of
// the run, and the latency percentiles in ms (the raw CSV is the record).
func summarize(results [][]sample, seconds float64) {
	var latencies []float64
	events, errors := 0.0, 0.0
	for _, samples := range results {
		for _, s := range samples {
			switch s.metric {
			case "lab_latency":
				latencies = append(latencies, s.value)
			case "lab_ops":
				events += s.value
			case "lab_errors":
				errors += s.value
			}
		}
	}
	sort.Float64s(latencies)
	q := func(p float64) float64 {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))]
	}
	mean := 0.0
	for _, v := range latencies {
		mean += v
	}
	if len(latencies) > 0 {
		mean /= float64(len(latencies))
	}
	fmt.Printf("{\"messages\": %d, \"events\": %.0f, \"events_per_s\": %.1f, \"errors\": %.0f, "+
		"\"latency_ms\": {\"mean\": %.3f, \"p50\": %.3f, \"p95\": %.3f, \"p99\": %.3f, \"max\": %.3f}}\n",
		len(latencies), events, events/seconds, errors, mean, q(0.5), q(0.95), q(0.99), q(1))
}
