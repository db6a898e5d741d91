"""Statistics and run comparison: paired ratios with their intervals and
rankings (statistics.py), the machine's noise guard (noise.py), Docker against
native (compare.py), and repeated runs checked against each other (runs.py).
Pure computation over result files, apart from runs.py's driver of make bench."""
