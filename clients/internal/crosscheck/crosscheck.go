// Package crosscheck is what every Go cross-check client shares: the plan it
// reads, the timing loop, and the JSON it writes (clients/<protocol>/crosscheck/,
// driven by load/crosscheck.py).
//
// A plan (the program's one argument, a JSON file) holds the endpoint, the
// request exactly as the lab's Python client sends it (wire_plan in
// clients/<protocol>/client.py), how many untimed calls to make first and how
// many to time. The program connects once, outside the timing, then sends the
// same request again and again, one call at a time, each timed on the
// monotonic clock from the request's write to the reply read and decoded.
package crosscheck

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"time"
)

// MaxErrors: a client that failed this many calls stops (a service that is
// gone would otherwise cost every remaining call its timeout).
const MaxErrors = 10

// Plan is the file load/crosscheck.py writes.
type Plan struct {
	Endpoint string          `json:"endpoint"`
	Request  json.RawMessage `json:"request"`
	Warmup   int             `json:"warmup"`
	Calls    int             `json:"calls"`
	TimeoutS float64         `json:"timeout_s"`
}

// Timeout of each network call (connect, one request and its reply).
func (p Plan) Timeout() time.Duration {
	if p.TimeoutS <= 0 {
		return 10 * time.Second
	}
	return time.Duration(p.TimeoutS * float64(time.Second))
}

// Result is what the program prints on stdout.
type Result struct {
	Library       string         `json:"library"`
	Version       string         `json:"version"`
	SamplesNs     []int64        `json:"samples_ns"`
	Errors        map[string]int `json:"errors"`
	FirstError    string         `json:"first_error,omitempty"`
	RequestSHA256 string         `json:"request_sha256"` // of the payload bytes it sent (see each client)
	RequestBytes  int            `json:"request_bytes"`
}

// Failure is a call that was answered, but not as a success in the protocol's terms.
type Failure struct {
	Kind string // the errors key: "status 404", "graphql error", "SOAP Fault", ...
	Msg  string
}

func (f *Failure) Error() string { return f.Kind + ": " + f.Msg }

// Fail makes a Failure of `kind`.
func Fail(kind, format string, args ...any) error {
	return &Failure{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// Kind is how an error is counted: a Failure's kind, else "timeout" or "transport".
func Kind(err error) string {
	var f *Failure
	if errors.As(err, &f) {
		return f.Kind
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "transport"
}

// Client is one connected protocol client: Call sends the plan's request once
// and returns when its reply is read and decoded (an error if it is not a
// success); Sent is the payload it writes, for the request's fingerprint.
type Client struct {
	Call  func() error
	Sent  []byte
	Close func()
}

// Main reads the plan named by the one argument, connects, runs and prints
// the result; it exits non-zero only when it could not start.
func Main(library, version string, connect func(Plan) (*Client, error)) {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crosscheck PLAN.json")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fatal(err)
	}
	var plan Plan
	if err := json.Unmarshal(data, &plan); err != nil {
		fatal(fmt.Errorf("plan %s: %w", os.Args[1], err))
	}
	if plan.Warmup < 1 || plan.Calls < 1 {
		fatal(fmt.Errorf("plan %s: warmup and calls must be >= 1 (an HTTP client's first call opens its connection)", os.Args[1]))
	}
	client, err := connect(plan)
	if err != nil {
		fatal(fmt.Errorf("connect %s: %w", plan.Endpoint, err))
	}
	defer client.Close()
	out := Run(plan, client)
	out.Library, out.Version = library, version
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fatal(err)
	}
}

// Run makes plan.Warmup untimed calls, then plan.Calls timed ones, one after another.
func Run(plan Plan, client *Client) Result {
	sum := sha256.Sum256(client.Sent)
	out := Result{SamplesNs: make([]int64, 0, plan.Calls), Errors: map[string]int{},
		RequestSHA256: hex.EncodeToString(sum[:]), RequestBytes: len(client.Sent)}
	failed := 0
	note := func(err error) bool {
		out.Errors[Kind(err)]++
		if out.FirstError == "" {
			out.FirstError = err.Error()
		}
		failed++
		return failed < MaxErrors
	}
	for i := 0; i < plan.Warmup; i++ {
		if err := client.Call(); err != nil && !note(err) {
			return out
		}
	}
	for i := 0; i < plan.Calls; i++ {
		start := time.Now() // carries Go's monotonic clock reading: time.Since uses it
		err := client.Call()
		elapsed := time.Since(start).Nanoseconds()
		if err != nil {
			if !note(err) {
				return out
			}
			continue
		}
		out.SamplesNs = append(out.SamplesNs, elapsed)
	}
	return out
}

// ModuleVersion is the version of a module compiled into this program ("go1.26.8" for the standard library).
func ModuleVersion(path string) string {
	if path == "std" {
		return runtime.Version()
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == path {
				if dep.Replace != nil {
					return dep.Replace.Version
				}
				return dep.Version
			}
		}
	}
	return "unknown"
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "crosscheck:", err)
	os.Exit(1)
}
