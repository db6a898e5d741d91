"""The load instrument, on Locust: every request/response implementation
driven by 10–1,000 concurrent clients, in the closed model (users calling
back to back) and the open model (a constant arrival rate, latency from each
request's scheduled start); the lab's own µs timings in HDR histograms,
merged over Locust's workers; CPU and memory of each service, the database
and the generator sampled beside them; results go to results/load/.

    python -m load                      # the default sweep (make load)
    python -m load --impl rest/python_flask --clients 10 100 --duration 5
    python -m load --workers 2 --netns  # a master and two workers on simulated hosts

Modules: locustfile (what Locust loads: the users, the window, the merge),
engine (one Locust run: a local process, or a master and its workers),
runner (runs, sweeps, knee search, the invalid-run rule), sweep (make load),
scenarios and broadcast (the studies' experiments), crosscheck (a Go or
Node.js client per protocol at concurrency 1), push (the push scenarios, with
the lab's Go push client), histograms, pinning, netns, summary, common.
"""
