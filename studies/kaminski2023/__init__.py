"""Kamiński et al. 2023: latency of insert, fetch-one and fetch-100 over REST,
gRPC, GraphQL and WebSockets (Tables 4-6) and bytes per operation (Table 7).
The lab's benchmarks (make bench) and wire capture (make capture) are its
scenario; it has no scenario of its own."""

from studies import Study

STUDY = Study(
    name="kaminski2023",
    citation="Kamiński et al., \"Comparative review of selected Internet communication protocols\", "
             "FCDS 2023, arXiv 2212.07475",
    measured="latency per operation (µs; Tables 4-6) and bytes per operation (Table 7) of REST, gRPC, "
             "GraphQL and WebSockets, on Windows and in Docker",
    order=10,
)
