"""Simulated latency runs with known ratios, noisy as this machine is, to check
what the sequential rule's intervals cover (lab.stats.sequential):

    python -m lab.stats.simulate --runs 400                  # the suite's looks: 100, 200, 400, 800
    python -m lab.stats.simulate --runs 1000 --first 25 --cap 200

A run is `cycles` cycles of the suite's design: every subject's one timed call a
cycle, `direct`'s four. Each call's time is

    base × ratio × machine(cycle) × speed(cycle)^elasticity × noise(call)

where machine(cycle) is the machine's speed, which every subject in the cycle
shares and the pairing cancels: two speeds, 1 and `slow` (1.7: the probe's 92-106
against 165-172 µs, methodology.md), in spells of `spell` cycles on average, slow
`slow_share` of the time (56-72 % measured), times a drift of up to `drift` over the
run (`direct`'s median moved up to 25 % within a run). `elasticity` makes the
ratio itself depend on the speed (ratios read lower when the machine is slow:
down to −0.4 across hours, assumed −0.1 within a run here), which the pairing does
not cancel, so neighbouring cycles' ratios are alike for as long as a spell lasts
(what the block bootstrap is for). noise(call) is lognormal (σ `sigma`) with
heavy-tailed outliers: a share `outliers` of calls multiplied by a Pareto factor
(tail index `tail`: 1.5, infinite variance), as preempted calls are.

The true ratio is the estimand's population value: the median of the per-cycle
ratio (a subject's call ÷ the median of `direct`'s four in the cycle) over the
stationary mixture of the two speeds, computed from 1,000,000 simulated cycles
(its own sampling error ~0.05 %, against half-widths of 2-6 %).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from typing import Any

from lab.stats.sequential import Rule, to_baseline


@dataclass(frozen=True)
class Machine:
    slow: float = 1.7
    slow_share: float = 0.6
    spell: float = 10.0          # mean length of a slow spell, in cycles
    drift: float = 0.25
    elasticity: float = -0.1
    sigma: float = 0.15
    outliers: float = 0.03
    tail: float = 1.5
    visits: int = 4              # direct's timed calls a cycle
    ratios: dict[str, float] = field(default_factory=lambda: {"a": 1.8, "b": 3.5})

    def speeds(self, rng: Any, cycles: int) -> Any:
        """Each cycle's speed state (True: slow), a two-state Markov chain at its stationary law."""
        import numpy as np
        leave_slow = 1 / self.spell
        leave_fast = leave_slow * self.slow_share / (1 - self.slow_share)
        state = np.empty(cycles, dtype=bool)
        u = rng.random(cycles)
        state[0] = u[0] < self.slow_share
        for c in range(1, cycles):
            state[c] = (u[c] >= leave_slow) if state[c - 1] else (u[c] < leave_fast)
        return state

    def noise(self, rng: Any, shape: Any) -> Any:
        import numpy as np
        out = rng.lognormal(0.0, self.sigma, shape)
        hit = rng.random(shape) < self.outliers
        return np.where(hit, out * (1 + rng.pareto(self.tail, shape)), out)

    def run(self, rng: Any, cycles: int) -> dict[str, list[list[float]]]:
        """{subject: its timed calls grouped by cycle}, direct included."""
        import numpy as np
        slow = self.speeds(rng, cycles)
        speed = np.where(slow, self.slow, 1.0)
        machine = speed * (1 + self.drift * np.arange(cycles) / max(cycles - 1, 1))
        base = 1e-3
        out = {"direct": (base * machine[:, None] * self.noise(rng, (cycles, self.visits))).tolist()}
        for name, ratio in self.ratios.items():
            times = base * ratio * machine * speed ** self.elasticity * self.noise(rng, cycles)
            out[name] = times[:, None].tolist()
        return out

    def truth(self, n: int = 1_000_000, seed: int = 12345) -> dict[str, float]:
        """The population median of each per-cycle ratio (the drift cancels in it)."""
        import numpy as np
        rng = np.random.default_rng(seed)
        slow = rng.random(n) < self.slow_share
        speed = np.where(slow, self.slow, 1.0)
        direct = np.median(self.noise(rng, (n, self.visits)), axis=1)
        return {name: float(np.median(ratio * speed ** self.elasticity * self.noise(rng, n) / direct))
                for name, ratio in self.ratios.items()}


def coverage(machine: Machine, rule: Rule, runs: int, seed: int = 1, run_length: int | None = None) -> dict[str, Any]:
    """`runs` simulated runs, each stopped by `rule`: how often each quoted interval held the
    true ratio, where the runs stopped, and their half-widths. run_length: the bootstrap's
    runs of cycles (None: the suite's, cycles / 16)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    truth = machine.truth()
    misses = {name: 0 for name in truth}
    stops: dict[int, int] = {}
    widths: list[float] = []
    for _ in range(runs):
        data = machine.run(rng, rule.cap)
        for cycles in rule.looks:
            rows = to_baseline({s: g[:cycles] for s, g in data.items()}, "direct", rule.level_at(cycles),
                               run_length)
            decision = rule.decide(cycles, rows)
            if decision["stop"]:
                break
        stops[cycles] = stops.get(cycles, 0) + 1
        widths.append(decision["worst_half_width"])
        for name, row in rows.items():
            misses[name] += not row["ci"][0] <= truth[name] <= row["ci"][1]
    intervals = runs * len(truth)
    missed = sum(misses.values())
    return {"runs": runs, "intervals": intervals, "missed": missed, "misses": misses,
            "coverage": 1 - missed / intervals, "truth": truth, "stopped_at": dict(sorted(stops.items())),
            "worst_half_width_median": float(np.median(widths)), "looks": list(rule.looks),
            "levels": list(rule.levels)}


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--first", type=int, default=100, help="the first look (cycles)")
    parser.add_argument("--cap", type=int, default=800, help="the last look (cycles)")
    parser.add_argument("--target", type=float, default=0.05, help="the half-width that stops a run")
    parser.add_argument("--spell", type=float, default=Machine.spell)
    parser.add_argument("--elasticity", type=float, default=Machine.elasticity)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    machine = Machine(spell=args.spell, elasticity=args.elasticity)
    found = coverage(machine, Rule(cap=args.cap, target=args.target, first=args.first), args.runs, args.seed)
    p = binomial_tail(found["missed"], found["intervals"], 1 - machine_confidence())
    print(f"{found['intervals']} intervals from {found['runs']} runs (looks {found['looks']}, levels "
          f"{[f'{v:.4%}' for v in found['levels']]}): {found['missed']} missed the true ratio, coverage "
          f"{found['coverage']:.2%}; P(as many misses | coverage 99 %) = {p:.3f}; stopped at {found['stopped_at']}; "
          f"median of the worst half-widths ±{found['worst_half_width_median']:.1%}")
    return 0


def machine_confidence() -> float:
    from lab.stats.statistics import CONFIDENCE
    return CONFIDENCE


if __name__ == "__main__":
    raise SystemExit(main())
