"""`python -m report`: the saved results (benchmarks per mode, wire captures)
and the published study's tables as one page, results/report.html (self-contained)
and results/report.md."""
