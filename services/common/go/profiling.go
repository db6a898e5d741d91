package common

import (
	"log"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"time"
)

// ServeProfiling serves Go's CPU profile on LAB_PPROF_ADDR when it is set
// (make profile, profiling/): GET /debug/pprof/profile?seconds=S answers with
// S seconds of runtime/pprof's CPU profile (.pb.gz, as net/http/pprof's, which
// `go tool pprof` opens). Off by default: no listener, no cost. Its own mux, not
// net/http/pprof's import, which would register on http.DefaultServeMux.
func ServeProfiling() {
	addr := os.Getenv("LAB_PPROF_ADDR")
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", cpuProfile)
	go func() { log.Printf("pprof on %s: %v", addr, http.ListenAndServe(addr, mux)) }()
}

func cpuProfile(w http.ResponseWriter, r *http.Request) {
	seconds, err := strconv.ParseFloat(r.URL.Query().Get("seconds"), 64)
	if err != nil || seconds <= 0 || seconds > 600 {
		http.Error(w, "seconds: a number in (0, 600]", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := pprof.StartCPUProfile(w); err != nil {
		http.Error(w, err.Error(), http.StatusConflict) // one profile at a time
		return
	}
	time.Sleep(time.Duration(seconds * float64(time.Second)))
	pprof.StopCPUProfile()
}
