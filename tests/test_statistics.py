"""The statistics the benchmark tables print."""

from __future__ import annotations

import math
import random
import re

from lab.stats.statistics import (
    PairedBootstrap,
    block_draws,
    cycles_of,
    median_ci95,
    paired_ratios,
    percentile,
    rank,
    summarize,
)


def test_percentile_interpolates_between_ranks():
    data = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert percentile(data, 0.5) == 3.0
    assert percentile(data, 0.95) == 4.8
    assert percentile(data, 0.0) == 1.0 and percentile(data, 1.0) == 5.0


def test_summary_is_in_microseconds():
    s = summarize([0.001, 0.002, 0.003])
    assert (s["min"], s["median"], s["max"], s["mean"]) == (1000.0, 2000.0, 3000.0, 2000.0)
    assert round(s["stddev"], 6) == 1000.0


def test_median_interval_covers_the_true_median_about_95_percent_of_the_time():
    rng = random.Random(7)
    covered = 0
    for _ in range(400):
        sample = sorted(rng.expovariate(1.0) for _ in range(201))
        low, high = median_ci95(sample)
        covered += low <= 0.6931471805599453 <= high  # ln 2, the exponential's median
    assert 0.92 <= covered / 400 <= 0.99


# -- bootstrap intervals of ratios and the ranking rule (synthetic data, known answers) --

def _interleaved(medians: dict[str, float], cycles: int, block: int, rng: random.Random,
                 spells: bool = False) -> dict[str, list[float]]:
    """Rounds as the suite takes them: cycle-major, `block` per cycle; lognormal
    noise around each subject's true median; with `spells`, a slowdown factor
    per cycle shared by every subject (a noisy neighbour)."""
    out: dict[str, list[float]] = {name: [] for name in medians}
    for _ in range(cycles):
        factor = rng.choice([1.0, 1.0, 1.6, 2.5]) if spells else 1.0
        for name, median in medians.items():
            out[name] += [median * factor * rng.lognormvariate(0, 0.25) for _ in range(block)]
    return out


def test_cycles_keep_order_and_drop_a_partial_block():
    assert cycles_of([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4]]


def test_a_clear_difference_is_ranked_with_an_interval_around_the_true_ratio():
    data = _interleaved({"fast": 100.0, "slow": 200.0, "direct": 50.0}, cycles=20, block=10,
                        rng=random.Random(3))
    result = rank(data, block=10, resamples=500)
    assert result["order"] == ["direct", "fast", "slow"]
    pair = next(p for p in result["pairs"] if (p["a"], p["b"]) == ("fast", "slow"))
    assert pair["relation"] == "<"
    assert pair["ci"][0] < 0.5 < pair["ci"][1] and pair["ci"][1] < 1
    assert pair["text"].startswith("fast < slow: ratio 0.") and "99 % CI" in pair["text"]
    assert result["to_baseline"]["slow"]["ci"][0] < 4.0 < result["to_baseline"]["slow"]["ci"][1]
    assert result["chain"] == "direct < fast < slow"


def test_equal_subjects_are_not_ranked():
    data = _interleaved({"a": 100.0, "b": 100.0}, cycles=20, block=10, rng=random.Random(4))
    result = rank(data, block=10, baseline=None, resamples=500)
    assert result["pairs"][0]["relation"] == "~"
    assert "no significant difference" in result["pairs"][0]["text"]
    assert result["chain"] in ("a = b", "b = a") and len(result["tiers"]) == 1
    assert result["to_baseline"] == {}


def test_a_ranking_reads_as_one_order_of_groups():
    """Where the intervals give no total order (a ~ b, b ~ c, but a < c), the
    ranking says which groups are indistinguishable instead of a chain a reader
    cannot use (a ~ b ~ c with a < c)."""
    pairs = {("a", "b"): {"relation": "~"}, ("b", "c"): {"relation": "~"}, ("a", "c"): {"relation": "<"},
             ("a", "d"): {"relation": "<"}, ("b", "d"): {"relation": "<"}, ("c", "d"): {"relation": "~"}}
    from lab.stats.statistics import tiers, tiers_text
    groups = tiers(["a", "b", "c", "d"], pairs)
    assert groups == [["a", "b"], ["c", "d"]]
    assert tiers_text(groups) == "a = b < c = d"
    # every pair within a group is indistinguishable; no '>' or '~' in the text
    assert ">" not in tiers_text(groups) and "~" not in tiers_text(groups)


def test_pairing_by_cycle_cancels_slow_spells_shared_by_all_subjects():
    """The same 10 % difference under spells that slow every subject of a cycle
    alike up to 2.5×: paired by cycle, the interval still excludes 1."""
    data = _interleaved({"a": 100.0, "b": 110.0}, cycles=30, block=10, rng=random.Random(5), spells=True)
    result = rank(data, block=10, baseline=None, resamples=500)
    assert result["pairs"][0]["relation"] == "<"
    low, high = result["pairs"][0]["ci"]
    assert low < 100 / 110 < high


def test_ratio_interval_covers_the_true_ratio_at_about_its_confidence():
    rng = random.Random(6)
    covered = 0
    trials = 100
    for _ in range(trials):
        data = _interleaved({"a": 100.0, "b": 150.0}, cycles=20, block=5, rng=rng)
        boot = PairedBootstrap({n: cycles_of(v, 5) for n, v in data.items()}, confidence=0.9,
                               resamples=300, seed=rng.randrange(1 << 30))
        _, (low, high) = boot.ratio("a", "b")
        covered += low <= 100 / 150 <= high
    assert 0.8 <= covered / trials <= 0.99


def test_a_ratio_is_the_median_of_its_per_cycle_ratios():
    """Per cycle a's median ÷ b's (b visited twice a cycle), then the median."""
    a = [[3.0], [4.0], [10.0]]
    b = [[1.0, 1.0], [1.0, 3.0], [4.0, 6.0]]
    assert paired_ratios(a, b) == [3.0, 2.0, 2.0]
    ratio, (low, high) = PairedBootstrap({"a": a, "b": b}, resamples=200).ratio("a", "b")
    assert ratio == 2.0 and 2.0 <= low <= high <= 3.0


def test_pairing_holds_a_ratio_across_runs_whose_machine_changes_where_a_ratio_of_medians_does_not():
    """Known answer a ÷ direct = 3. Twenty runs, each on a machine that is
    twice as slow in a share of its cycles, a different share (30-70 %) in
    each run: the paired ratio stays within ±3 % of 3 in every run (its worst
    here 1.7 %); the ratio of the two medians, each of which can fall among
    the slow cycles or the fast ones, strays past it (its worst here 7.1 %)."""
    rng = random.Random(10)
    paired, of_medians = [], []
    for _ in range(20):
        data = {"a": [], "direct": []}
        slow_share = rng.uniform(0.3, 0.7)
        for _ in range(400):
            speed = 2.0 if rng.random() < slow_share else 1.0
            data["a"].append(3.0 * speed * rng.lognormvariate(0, 0.1))
            data["direct"] += [speed * rng.lognormvariate(0, 0.1) for _ in range(4)]
        result = rank(data, {"a": 1, "direct": 4}, resamples=200)
        paired.append(result["to_baseline"]["a"]["ratio"])
        of_medians.append(sorted(data["a"])[200] / sorted(data["direct"])[800])
    assert all(abs(r / 3 - 1) <= 0.03 for r in paired), paired
    assert sum(abs(r / 3 - 1) > 0.03 for r in of_medians) >= 1
    assert max(abs(r / 3 - 1) for r in of_medians) > 2 * max(abs(r / 3 - 1) for r in paired)


def test_an_operations_table_is_printed_as_soon_as_it_is_measured():
    """benchmarks/conftest.py early_table: the table, its ranking and the time
    it took, from the operation's interleaved result alone (synthetic times:
    b is twice direct in every cycle)."""
    from benchmarks.conftest import early_table
    from benchmarks.interleave import Design
    from benchmarks.suite import Result
    rng = random.Random(3)
    direct = [0.001 * (1 + rng.uniform(-0.05, 0.05)) for _ in range(60)]
    result = Result("fetch-one", Design(blocks=60), seconds=12.4,
                    times={"direct": direct, "b": [2 * t for t in direct]},
                    cpu_us={"direct": {"client": 400.0}, "b": {"client": 500.0, "service": 900.0}},
                    wall_us={"direct": 1000.0, "b": 2000.0})
    result.ranking = rank(result.times, 1)
    lines: list[str] = []
    early_table(lines.append, result)
    text = "\n".join(lines)
    b_row = next(line for line in lines if line.startswith("b "))
    assert "2.00 [2.00–2.00]" in b_row and b_row.split()[-4:] == ["500", "900", "-", "600"]
    assert "direct < b: ratio 0.50" in text
    assert re.fullmatch(r"\(fetch-one measured in 12 s; .* printed at \d\d:\d\d:\d\d UTC\)", lines[-1])
    lines.clear()
    result.gc = {"frozen_objects": 220161, "collections": [900, 80, 3], "ms": 310.4, "in_timed_calls_ms": 120.2,
                 "largest_ms": 1.42}
    early_table(lines.append, result)
    assert ("; the client's garbage collector, its 220,161 objects from before frozen: 983 collections (3 full) "
            "in 310 ms, 120 ms of it inside timed calls, the longest 1.4 ms; every table again") in lines[-1]
    lines.clear()
    early_table(lines.append, Result("insert", Design()))  # nothing measured (make test): nothing printed
    assert lines == []


def test_the_baseline_is_visited_several_times_a_cycle_each_visit_placed_at_random():
    """benchmarks/interleave.measure with baseline_visits=4: direct gets 4 warm
    pairs per cycle, the others 1, and every cycle holds every subject."""
    from benchmarks.interleave import Design, measure
    log: list[str] = []
    calls = {name: (lambda name=name: log.append(name)) for name in ("a", "b", "direct")}
    design = Design(block=1, discard=1, blocks=50, warmup=0, baseline_visits=4)
    times = measure(calls, design, seed=7).times
    assert {name: len(t) for name, t in times.items()} == {"a": 50, "b": 50, "direct": 200}
    assert design.per_cycle(["a", "direct"]) == {"a": 1, "direct": 4}
    cycles = [log[i:i + 12] for i in range(0, len(log), 12)]  # 6 visits x (1 untimed + 1 timed)
    assert all(sorted(c) == sorted(["a"] * 2 + ["b"] * 2 + ["direct"] * 8) for c in cycles)
    # direct's visits are spread: not always one run of 8 calls in the same place
    assert len({"".join(x[0] for x in c) for c in cycles}) > 10


def test_the_measured_cycles_run_on_a_frozen_heap_and_record_the_collections_inside_timed_calls():
    """measure(): the process's objects are frozen (gc.freeze) through the measured
    cycles only, unfrozen after; every collection meanwhile is counted, and one
    made inside a timed call counts as inside, one between blocks does not."""
    import gc

    from benchmarks.interleave import Design, measure
    frozen: dict[str, list[int]] = {"warm": [], "timed": []}
    phase = ["warm"]

    def a():
        frozen[phase[0]].append(gc.get_freeze_count())
        if phase[0] == "timed":
            for _ in range(2000):  # cycles for it to find: five empty ones once summed to 0.0 ms
                loop: list = []
                loop.append(loop)
            gc.collect()  # a full collection inside a call: timed when the call is

    def between(name, results):
        if phase[0] == "timed":
            gc.collect(0)  # outside every timed window

    def progress(text):
        phase[0] = "timed"  # said when warm and settled, just before the measured cycles
    assert gc.get_freeze_count() == 0
    design = Design(blocks=5, block=1, discard=1, warmup=2, settle_cycles=1, baseline_visits=4)
    m = measure({"a": a, "direct": lambda: None}, design, seed=1, between=between, progress=progress)
    assert frozen["warm"] and set(frozen["warm"]) == {0}
    assert min(frozen["timed"]) > 1000 and gc.get_freeze_count() == 0
    record = m.gc
    assert record["frozen_objects"] > 1000
    visits = 1 + 4  # a once a cycle, direct four times
    # a: 5 cycles x (1 discarded + 1 timed) full collections; between: a gen-0 collection after each block
    assert record["collections"][2] >= 10 and record["collections"][0] >= 5 * visits
    assert 0 < record["in_timed_calls_ms"] < record["ms"] and record["largest_ms"] > 0


def test_warm_up_is_counted_per_subject_and_settling_in_fixed_cycles():
    """A subject's own warm-up count replaces the design's; the warm-up stops
    at warmup_max_s (and says so); then exactly settle_cycles untimed cycles,
    their hooks run, before the measured ones."""
    import time

    from benchmarks.conftest import settled
    from benchmarks.interleave import Design, measure
    made = {"direct": 0, "node": 0, "slow": 0}
    blocks_seen = []

    def counting(name, pause=0.0):
        def call():
            made[name] += 1
            time.sleep(pause)
        return call
    calls = {"direct": counting("direct"), "node": counting("node"), "slow": counting("slow", 0.02)}
    # node's calls are instant, but in threads a call's wall time holds the others' turns with the GIL:
    # under a loaded machine's scheduling 500 of them once took 0.4 s; 100 stay far below the limit
    design = Design(blocks=4, discard=1, warmup=3, warmup_max_s=0.5, settle_cycles=5, baseline_visits=2)
    m = measure(calls, design, seed=2, warmup={"node": 100, "slow": 1000},
                between=lambda name, results: blocks_seen.append(name))
    warm = m.settle["warmup"]
    assert warm["direct"]["calls"] == 3 and warm["node"] == {**warm["node"], "calls": 100, "asked": 100}
    assert 5 <= warm["slow"]["calls"] < 1000 and warm["slow"]["asked"] == 1000   # cut by the 0.5 s limit
    visits = 2 + 1 + 1
    assert m.settle["cycles"] == 5 and len(blocks_seen) == visits * (5 + 4)
    assert {name: len(t) for name, t in m.times.items()} == {"direct": 8, "node": 4, "slow": 4}
    # every call: warm-up, then (discard + timed) per visit over settling and measured cycles
    assert made["node"] == 100 + 2 * (5 + 4) and made["direct"] == 3 + 2 * 2 * (5 + 4)
    line = settled(m.settle)
    assert "then 5 untimed cycles" in line and "3, 100, 1,000 calls a subject" in line
    assert f"slow ({warm['slow']['calls']:,} of 1,000 calls)" in line


def test_warm_up_runs_every_subject_at_once_and_a_subject_drops_out_when_warmed():
    """No subject waits idle while another warms, and none waits on another's calls:
    the subjects' warm-up calls run at the same time (here each call waits at a barrier
    that opens only when all three are calling at once: taking turns, it would break),
    and one that has its count stops while the others go on."""
    import threading

    from benchmarks.interleave import Design, measure
    together = threading.Barrier(3, timeout=10)
    seen: list[str] = []

    made = {"a": 0, "b": 0, "c": 0}

    def call(name):
        def one():
            made[name] += 1
            if made[name] <= 2:  # the first two calls of each: all three at once
                together.wait()
            seen.append(name)
        return one
    calls = {"a": call("a"), "b": call("b"), "c": call("c")}
    design = Design(blocks=1, discard=0, warmup=2, settle_cycles=0)
    m = measure(calls, design, seed=3, warmup={"b": 40})
    warm = m.settle["warmup"]
    assert {n: w["calls"] for n, w in warm.items()} == {"a": 2, "b": 40, "c": 2}
    assert sorted(seen[:3]) == ["a", "b", "c"]  # every first call had begun before any second one
    assert made == {"a": 2 + 1, "b": 40 + 1, "c": 2 + 1}  # the warm-up, then one measured cycle
    assert m.settle["warmup_s"] >= 0 and all(w["wall"] >= w["seconds"] for w in warm.values())


def test_a_warm_up_that_fails_stops_the_run_with_its_error_and_the_other_subjects_warm_up_too():
    """One subject's failing call ends every subject's warm-up (Ctrl-C in the main
    thread does the same): the others stop after their current call, far short of their count."""
    import time

    from benchmarks.interleave import Design, measure
    made = {"a": 0}

    def slow():
        made["a"] += 1
        time.sleep(0.001)

    def broken():
        time.sleep(0.05)
        raise ConnectionError("service gone")
    try:
        measure({"a": slow, "b": broken}, Design(blocks=1, warmup=3), seed=1, warmup={"a": 100_000})
    except ConnectionError as exc:
        assert "service gone" in str(exc)
    else:
        raise AssertionError("a failing warm-up call did not stop the measurement")
    assert 0 < made["a"] < 100_000


def test_a_long_measurement_says_how_far_it_is_between_cycles():
    """measure(progress=...): a line when warm and settled, then (here with
    progress_s=0: after every cycle but the last) how many cycles are done and
    about how long is left; none from inside a cycle, none without a callback."""
    from benchmarks.interleave import Design, measure
    said: list[str] = []
    log: list[str] = []
    calls = {"a": lambda: log.append("a"), "direct": lambda: log.append("direct")}
    design = Design(blocks=4, discard=0, warmup=1, settle_cycles=1)

    def progress(text: str) -> None:
        said.append(text)
        log.append("progress")
    measure(calls, design, seed=1, progress=progress, progress_s=0.0)
    assert re.fullmatch(r"warmed up in \d+ s and settled in \d+ s; measuring 4 cycles", said[0])
    assert [re.sub(r"\d+ s", "N s", t) for t in said[1:]] == [
        f"{k} of at most 4 cycles in N s, about N s left at most" for k in (1, 2, 3)]
    # between cycles only: every progress line follows a whole cycle (a: 1 visit, direct: baseline_visits)
    cycle = 1 + design.baseline_visits
    warm = 2 + cycle  # one warm-up call each, one settling cycle
    assert [i for i, x in enumerate(log) if x == "progress"] == [warm + k * (cycle + 1) for k in range(4)]
    measure(calls, design, seed=1, progress_s=0.0)  # no callback: nothing said, nothing fails


def test_a_time_budget_stops_the_measured_cycles_after_the_one_that_ends_past_it(monkeypatch):
    """Design.max_seconds (LAB_BENCH_MAX_S): the cycles stop at a time budget, whole cycles only,
    and the measurement says how many ran, of how many asked, and why it stopped."""
    from benchmarks import interleave
    from benchmarks.interleave import Design, measure
    now = [0.0]
    monkeypatch.setattr(interleave.time, "monotonic", lambda: now[0])

    def tick() -> None:
        now[0] += 1.0   # every call takes a second of this clock
    calls = {"a": tick, "direct": tick}
    design = Design(blocks=50, discard=0, warmup=0, baseline_visits=1, max_seconds=10, min_blocks=2)
    m = measure(calls, design, seed=1)
    assert m.stopped == {"stopped_at": 5, "cap": 50, "seconds": 10.0, "stopped_by": "time budget (10 s)"}
    assert "measured" not in m.settle   # one record of how the cycles ended (Measurement.stopped)
    assert len(m.times["a"]) == len(m.times["direct"]) == 5   # whole cycles, every subject alike
    m = measure(calls, Design(blocks=50, discard=0, warmup=0, baseline_visits=1, max_seconds=10, min_blocks=8), seed=1)
    assert m.stopped["stopped_at"] == m.cycles == 8   # never fewer than min_blocks, whatever the budget
    m = measure(calls, Design(blocks=4, discard=0, warmup=0, baseline_visits=1), seed=1)
    assert m.stopped["stopped_at"] == 4 and m.stopped["stopped_by"] == "cycles"


def test_the_time_budget_is_read_per_operation(monkeypatch):
    from benchmarks.suite import max_seconds
    monkeypatch.setenv("LAB_BENCH_MAX_S", "fetch-1=40,fetch-100=120")
    assert (max_seconds("fetch-1"), max_seconds("fetch-100"), max_seconds("insert")) == (40.0, 120.0, None)
    monkeypatch.setenv("LAB_BENCH_MAX_S", "90")
    assert max_seconds("insert") == 90.0
    monkeypatch.delenv("LAB_BENCH_MAX_S")
    assert max_seconds("insert") is None


def test_an_oversampled_baseline_narrows_every_ratio_to_it():
    """Known answer: a/direct = 2, the baseline the noisier (as `direct`, the
    cheapest subject, is here). With the baseline sampled 4x per cycle the
    interval of the ratio is narrower than with 1x, and both cover 2. (The
    width of a bootstrap interval of a median is itself noisy: over seeds
    0-7 the 4x width was 0.41-0.84 of the 1x.)"""
    rng = random.Random(8)
    widths = {}
    for visits in (1, 4):
        data = {"a": [], "direct": []}
        for _ in range(200):
            data["a"].append(2.0 * rng.lognormvariate(0, 0.05))
            data["direct"] += [rng.lognormvariate(0, 0.3) for _ in range(visits)]
        result = rank(data, {"a": 1, "direct": visits}, resamples=400)
        low, high = result["to_baseline"]["a"]["ci"]
        assert low < 2.0 < high
        widths[visits] = high - low
    assert widths[4] < 0.9 * widths[1]


def test_the_noise_guard_flags_a_baseline_that_slowed_during_the_run_and_not_one_that_did_not():
    """lab.stats.noise: the calibration alone missed a machine whose CPU per operation
    rose 20 %; the baseline's own rounds (last fifth vs first fifth) show it."""
    from lab.stats import noise
    rng = random.Random(9)
    steady = [250e-6 * rng.lognormvariate(0, 0.16) for _ in range(3200)]
    slowed = steady[:1600] + [t * 1.15 for t in steady[1600:]]
    before = {"calibration_us": 60.0, "loadavg": [1.0, 1.0, 1.0], "cpu_ticks": {}}
    after = {**before, "calibration_us": 58.0}   # the calibration moved -3 %: within its threshold
    quiet = noise.verdict(before, after, baseline={"fetch-one": steady})
    assert quiet["flagged"] is False and abs(quiet["baseline_drift"]["fetch-one"]) < 0.03
    loud = noise.verdict(before, after, baseline={"insert": steady, "fetch-one": slowed})
    assert loud["flagged"] is True and 0.12 < loud["baseline_drift"]["fetch-one"] < 0.18
    assert any("direct's fetch-one median moved +1" in r for r in loud["reasons"])
    assert "direct's drift insert" in noise.describe(loud) and noise.describe(loud).startswith("NOISY RUN")
    assert noise.drift([1.0] * 10) is None   # too few rounds to say


def test_the_noise_guard_takes_the_fastest_of_several_probes_so_one_slow_spell_does_not_flag_a_run(monkeypatch):
    """lab.stats.noise.snapshot: this machine's vCPUs flip between ~95 and ~168 µs in
    spells of seconds; a run whose first probe fell in a slow spell and whose
    last did not was flagged (-44 %) though the machine was the same. Known
    answers: probes fed in order, the fastest kept, every sample and the share
    in slow spells recorded."""
    from lab.stats import noise
    fed = iter([168.0, 95.0, 96.0, 170.0, 94.0, 97.0, 95.0, 169.0, 96.0,    # before: a slow first probe
                93.0, 94.0, 166.0, 95.0, 96.0, 93.0, 167.0, 94.0, 95.0])    # after
    monkeypatch.setattr(noise.interpreter, "probe", lambda: {"calibration_us": next(fed)})
    before, after = noise.snapshot(samples=9, spacing=0), noise.snapshot(samples=9, spacing=0)
    assert before["calibration_us"] == 94.0 and after["calibration_us"] == 93.0
    assert before["calibration_samples"][0] == 168.0 and len(after["calibration_samples"]) == 9
    assert before["slow_share"] == 3 / 9 and after["slow_share"] == 2 / 9
    guard = noise.verdict(before, after)
    assert guard["flagged"] is False and abs(guard["calibration_change"]) < 0.02
    assert "(fastest of 9 probes, 33 % of them in slow spells)" in noise.describe(guard)
    # The same first probes alone, as one probe a snapshot was: flagged.
    assert noise.verdict({"calibration_us": 168.0}, {"calibration_us": 93.0})["flagged"] is True
    # A machine slow through a whole snapshot is still flagged.
    fed = iter([95.0, 96.0, 94.0, 168.0, 170.0, 165.0, 169.0, 171.0, 167.0])
    slow = noise.snapshot(samples=3, spacing=0), noise.snapshot(samples=6, spacing=0)
    assert noise.verdict(*slow)["flagged"] is True and slow[1]["calibration_us"] == 165.0


def test_block_draws_are_runs_of_consecutive_cycles_wrapping_round_and_every_cycle_equally_likely():
    draws = block_draws(100, resamples=400, seed=3, length=8)
    assert draws.shape == (400, 100)
    for row in draws[:50]:
        for i in range(1, 100):
            if i % 8:   # inside a run: the next cycle, past the last one the first
                assert row[i] == (row[i - 1] + 1) % 100
    counts = [0] * 100
    for row in draws:
        for i in row:
            counts[i] += 1
    assert min(counts) > 0.8 * 400 and max(counts) < 1.2 * 400   # 400 expected each: no end drawn less
    assert block_draws(800, 10, seed=1).shape == (10, 800)       # default: 800 cycles in runs of 50
    assert all(row[i] == (row[i - 1] + 1) % 800 for row in block_draws(800, 10, seed=1)
               for i in range(1, 800) if i % 50)
    assert block_draws(800, 10, seed=1, length=1).max() < 800


def _drifting_run(rng: random.Random, drift: float) -> dict[str, list[list[float]]]:
    """800 cycles of a and direct, a ÷ direct = 3 at its stationary median, times a
    slow spell (AR(1), lag-one correlation 0.98, innovation sd `drift`) that moves
    a's ratio as the machine's spells move a CPU-heavy service's here."""
    spell, a, direct = 0.0, [], []
    for _ in range(800):
        spell = 0.98 * spell + rng.gauss(0, drift)
        direct.append(rng.lognormvariate(0, 0.1))
        a.append(3.0 * direct[-1] * math.exp(spell) * rng.lognormvariate(0, 0.1))
    return {"a": cycles_of(a, 1), "direct": cycles_of(direct, 1)}


def test_intervals_in_runs_of_cycles_cover_a_ratio_that_drifts_where_cycle_by_cycle_ones_do_not():
    """Known answer 3. 60 runs whose ratio drifts in spells (sd 5 %): 90 %
    intervals drawing cycles one by one covered 3 in 40 % of the runs, drawn
    in runs of 50 cycles in 78 %. Without drift both hold near 90 %."""
    rng = random.Random(11)
    for drift, one_by_one, in_runs in ((0.01, (0.0, 0.6), (0.7, 1.0)), (0.0, (0.8, 1.0), (0.8, 1.0))):
        covered = {1: 0, None: 0}
        for t in range(60):
            groups = _drifting_run(rng, drift)
            for length in covered:
                boot = PairedBootstrap(groups, confidence=0.9, resamples=300, seed=t, run_length=length)
                _, (low, high) = boot.ratio("a", "direct")
                covered[length] += low <= 3.0 <= high
        assert one_by_one[0] <= covered[1] / 60 <= one_by_one[1], (drift, covered)
        assert in_runs[0] <= covered[None] / 60 <= in_runs[1], (drift, covered)


def test_the_warm_up_keeps_at_most_its_lanes_calls_in_flight_and_every_subject_advances():
    """45 subjects' warm-ups at once overloaded the one database (a fetch-100 past the
    client's deadline): with lanes=3, never more than three calls run at once, a subject's
    own calls never overlap, and each subject gets its count while the others go on."""
    import threading
    import time

    from benchmarks.interleave import Design, measure
    lock = threading.Lock()
    in_flight = {"now": 0, "most": 0}
    mine: dict[str, int] = {}
    made: dict[str, int] = {}

    def call(name):
        def one():
            with lock:
                in_flight["now"] += 1
                in_flight["most"] = max(in_flight["most"], in_flight["now"])
                mine[name] = mine.get(name, 0) + 1
                assert mine[name] == 1, f"{name}'s calls overlapped"
                made[name] = made.get(name, 0) + 1
            time.sleep(0.002)
            with lock:
                in_flight["now"] -= 1
                mine[name] -= 1
        return one
    calls = {f"s{i}": call(f"s{i}") for i in range(10)}
    m = measure(calls, Design(blocks=1, discard=0, warmup=5, settle_cycles=0, warmup_lanes=3), seed=4,
                warmup={"s0": 40})
    assert in_flight["most"] == 3
    assert {n: w["calls"] for n, w in m.settle["warmup"].items()} == {"s0": 40, **{f"s{i}": 5 for i in range(1, 10)}}
    assert made["s0"] == 41 and all(made[f"s{i}"] == 6 for i in range(1, 10))  # and one measured cycle each


def test_every_sites_baseline_is_visited_baseline_visits_times_a_cycle():
    """A run of both modes keeps direct@docker's rounds as direct's: four a cycle, paired with the
    other subjects' one (the suite's Design.visits)."""
    from lab.stats.statistics import rounds_per_cycle

    design = {"block": 1, "baseline": "direct", "baseline_visits": 4}
    assert [rounds_per_cycle(design, s) for s in ("direct", "direct@docker", "rest/python_flask@docker",
                                                  "rest/python_flask")] == [4, 4, 1, 1]


def test_the_designs_record_says_the_baselines_visits_as_a_number():
    """The run's context records the design; its order sentence carries the value, not the field's name
    (the reference's context table printed "the baseline baseline_visits times")."""
    from benchmarks.interleave import Design
    order = Design(baseline_visits=4).describe()["order"]
    assert "(the baseline 4 times)" in order and "baseline_visits" not in order
