"""The load instrument: k6 (v1.8.1, built once by lab.tools) drives every
implementation with 10–1,000 concurrent clients, in the closed model (virtual
users) and the open model (constant arrival rate); raw samples become HDR
histograms; CPU and memory of each service, the database and the generator
are sampled beside them; results go to results/load/.

    python -m load                      # the default sweep (make load)
    python -m load --impl rest/python_flask --clients 10 100 --duration 5

Modules: operations (what one request is, per protocol, built from the lab's
own clients), k6 (one run of the engine and its raw samples), pinning (CPU
sets), runner (runs, sweeps, knee search, the invalid-run rule), scenarios
(the studies' experiments), scripts/ (one k6 script per protocol).
"""
