"""python -m studies NAME [options]: a study's scenario (studies/NAME/scenario.py).

    python -m studies                   # the studies and their scenarios
    python -m studies feathers          # a scenario of its own on Locust (its --help: the load options)
    python -m studies push [--quick]    # every push study's runs, interleaved, in one results file
    python -m studies push --scenario NAME

The push studies' scenarios (INSTRUMENT = "push") share one run of the push
instrument (load/push.py) so that their points are measured minutes apart
under the same background load; their default run was 132 runs, 458 s of
warm-ups and windows: 520 s (8.7 minutes) with the lab's start-up, measured on
the lab's 2-core machine at a load average of ~18 (each run records its time
in context.push.seconds); --quick about 2 minutes.
"""

from __future__ import annotations

import sys

from studies import STUDIES

PUSH = "push"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    scenarios = {s.name: s.scenario() for s in STUDIES if s.scenario() is not None}
    push = {name: m for name, m in scenarios.items() if getattr(m, "INSTRUMENT", None) == PUSH}
    own = {name: m for name, m in scenarios.items() if name not in push}
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        for s in STUDIES:
            how = ("push" if s.name in push else s.name) if s.name in scenarios else "(the lab's benchmarks)"
            print(f"  {s.name:<14} {how:<24} {s.citation}")
        return 0
    name, rest = argv[0], argv[1:]
    if name == PUSH:
        from load import push as instrument

        return instrument.main(rest, push)
    if name in push:  # a push study alone: the push command with its scenario
        from load import push as instrument

        return instrument.main(["--scenario", name, *rest], push)
    if name not in own:
        raise SystemExit(f"no scenario named {name!r}: {', '.join([*own, PUSH])}")
    return own[name].main(rest)


if __name__ == "__main__":
    raise SystemExit(main())
