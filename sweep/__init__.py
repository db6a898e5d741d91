"""python -m sweep (make sweep): the latency suite over a grid of conditions.

A **cell** is one payload operation, one value of the compression axis and
one network path; a **group** is one run of the latency suite
(`python -m pytest benchmarks --benchmark-only -p no:xdist`, with LAB_PATHS,
LAB_VARIANTS, LAB_ONLY, LAB_BENCH_OPERATIONS and LAB_BENCH_CYCLES set), so
every subject of a cell, and every cell of a group that shares an operation,
is measured together, interleaved and paired by cycle. Each run writes its
latency file (under results/sweep/runs/, never over results/benchmarks/);
the sweep reads it back and writes one result of kind "sweep"
(results/sweep/latest.json and sweep-<date>.json): per cell every subject's
median, its ratio to its site's `direct` with the 99 % interval, every pair's
paired ratio with its interval, the cell's ranking and its site's ranking,
the run file and its context; then the crossovers along each axis
(sweep/crossover.py) and what `protolab advise` reads (sweep/advise.py).

The default grid, and why it fits 30 minutes on a 2-core machine
(sweep/grid.py has the arithmetic; `python -m sweep --dry-run` prints it):

- one implementation per protocol: the Go one where there is one, else the
  first in the registry's order (six subjects and `direct` per site);
- payload: fetch-1, fetch-10, fetch-100, fetch-1000 on loopback;
- compression: off and on (the compression axis' base and gzip) at fetch-100
  and fetch-1000 on loopback;
- the network path: loopback, a bare veth (0 ms), 1, 20 and 100 ms round
  trip and 10 Mbit/s, at fetch-1 and fetch-100.

Three runs. The first two are cheap (a few milliseconds a call); the third is
dominated by the 100 ms path, where every call of every subject and of
`direct` waits at least one round trip, and by 10 Mbit/s, where fetch-100's
response takes ~0.1 s to cross. Start-up and warm-up (capped at 10 s a
subject) come off the budget first; the rest is shared between the three
runs, and each run's cycles are its part ÷ a cycle's planned seconds (a model
of each call: a base time by response size, calibrated from saved runs where
there are some, slow-start round trips and the link's rate), never below 20;
every cell records its count. A subject planned slower than 1 s a call at a
slice's largest payload is left out of that slice, saying so. A slice with more cycles
(`--cycles`) or the full grid (`--grid full`: every implementation, the
payload sizes, 100 Mbit/s and 1 % loss) takes longer; `--dry-run` says how
long, before anything runs.
"""
