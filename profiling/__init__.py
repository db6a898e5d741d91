"""CPU profiles per implementation and operation (`make profile`, issue 45).

Each service is driven with the latency suite's calls (benchmarks/suite.py:
get(FETCH_ID), list(100, 0)) one after another, as the suite's client does,
while its runtime's own profiler samples it: py-spy for Python (attached by
pid to the service's process tree), runtime/pprof for Go (the opt-in
LAB_PPROF_ADDR endpoint of services/common/go/profiling.go), V8's --cpu-prof
for Node.js (NODE_OPTIONS; the samples cut to the workload's window). The
database is measured as a whole (CPU seconds per call; a stack profile with
perf where the kernel lets it). Everything lands in
results/profiles/<impl>/<operation>/: the runtime's native file (opens in
speedscope or `go tool pprof`), stacks.collapsed (one line per stack, root
first: the common form, which speedscope also opens) and summary.json (top
frames by self-CPU share and the split into categories, profiling/categories.toml).

Profiling never runs inside the timed latency suite: a sampling profiler
costs its target CPU time (py-spy pauses the process for every sample).
"""
