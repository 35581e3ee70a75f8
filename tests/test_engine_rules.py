"""The engine's rules with a FAKE fio (tests/fakes/fio_runner.py): no fio, milliseconds.

The stop rule (steady after N rounds, the round limit, the window size, every
tracking variable, the excursion limits), write saturation's stop, and resume:
continue after a short gap, a new segment after a long one (``resume_gap``), the
round limit per segment and the cap over all segments, idle gaps inside a run,
restarts.  Rounds back to back: the next round started ahead while one runs, taken
up only once that one is stored and did not end the test, otherwise discarded and
never counted; an interrupt stops both.  The engine runs for real -- plan, store,
purge of a 16 MiB file in tmp_path, job files -- only fio is scripted: IOPS per
(test, round, point), and time under the test's control where gaps matter.
"""

from __future__ import annotations

import itertools
import json
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import STAGED_OFF, merged
from tests.fakes.fio_runner import Call, FakeClock, FakeFio, Run, parse_jobfile
from tkbench import engine as engine_mod
from tkbench import profile
from tkbench.analysis.stoprules import ROUND_CAP
from tkbench.engine import Engine, EngineOptions, check_resumable, new_manifest
from tkbench.engine import clock as engine_clock
from tkbench.engine import events as engine_events
from tkbench.errors import DeviceError, Interrupted, RunDirError
from tkbench.fio import jobfile
from tkbench.plan import build as planmod
from tkbench.profile.build import build as build_profile
from tkbench.profile.build import load as load_profile
from tkbench.rundir.store import RunData, RunStore, load_run
from tkbench.targets import open_target

MiB = 1024 * 1024
ONLY_IOPS = ["tests.throughput.enabled=false", "tests.latency.enabled=false"]
ONLY_IOPS += ["tests.wsat.enabled=false", *STAGED_OFF]
ONLY_WSAT = ["tests.iops.enabled=false", "tests.throughput.enabled=false"]
ONLY_WSAT += ["tests.latency.enabled=false", *STAGED_OFF]
STEADY = 10_000.0


def never_steady(call: Call) -> float:
    """Alternating 10,000 and 30,000 IOPS: the data excursion is always far beyond 20 %."""
    return STEADY if call.round % 2 else 3 * STEADY


def fresh_until(first_steady: int) -> Callable[[Call], float]:
    """A drive fresh out of the box: far faster before round ``first_steady``, flat after."""

    def script(call: Call) -> float:
        return STEADY * (1 + max(0, first_steady - call.round)) if call.round else STEADY

    return script


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    """The engine's clock, moved on by the fake fio and by the test."""
    c = FakeClock()
    monkeypatch.setattr(engine_clock, "source", c)
    yield c


def new_engine(
    tmp: Path, fake: FakeFio, overrides: list[str], **options: Any
) -> tuple[Engine, Path]:
    """A new run of the quick profile (FAST, plus ``overrides``) on a 16 MiB file."""
    prof = load_profile("quick", merged(*overrides))
    target = open_target(str(tmp / "t.img"), size=16 * MiB, create=True)
    with target.materialized():  # create the file (kept once the body succeeds)
        pass
    plan = planmod.build(prof, target.info())
    store = RunStore.create(tmp / "run", new_manifest(plan, target, fake.version(), [], []))
    return Engine(plan, target, fake, store, fake.progress, EngineOptions(**options)), tmp / "run"


def resumed_engine(tmp: Path, fake: FakeFio, **options: Any) -> Engine:
    """The run in tmp/run continued with its stored profile, as ``tkbench run --resume``."""
    data = load_run(tmp / "run")
    check_resumable(data)
    prof = build_profile(dict(data.manifest.profile.resolved), data.manifest.profile.source)
    target = open_target(str(tmp / "t.img"))
    plan = planmod.build(prof, target.info())
    store = RunStore.open(tmp / "run")
    return Engine(plan, target, fake, store, fake.progress, EngineOptions(**options))


def interrupted_after(tmp: Path, fake: FakeFio, overrides: list[str], rounds: int) -> None:
    """Start a run and stop it (as a SIGTERM would) once ``rounds`` rounds are stored."""
    eng, _ = new_engine(tmp, fake, overrides, stop=lambda: len(fake.rounds()) >= rounds)
    with pytest.raises(Interrupted):
        eng.run()
    assert load_run(tmp / "run").manifest.status == "interrupted"


def rounds_of(run: RunData, test: str) -> list[tuple[int, int]]:
    return [(r.round, r.segment) for r in run.test(test).rounds]


def result(run: RunData, test: str) -> dict[str, Any]:
    """The test's result.json as stored (plain JSON data)."""
    res = run.test(test).result
    assert res is not None
    return res.to_json()


# --------------------------------------------------------------------------- stop rule


@pytest.mark.parametrize("window", [2, 3, 5])
def test_steady_state_stops_at_the_first_steady_window(tmp_path: Path, window: int) -> None:
    # rounds 1-4 fresh (50k, 40k, 30k, 20k IOPS), flat from round 5: the first window
    # that passes lies wholly in the flat part, and no round runs after it
    fake = FakeFio(fresh_until(5))
    eng, out = new_engine(tmp_path, fake, [*ONLY_IOPS, f"tests.iops.rounds.window={window}"])
    assert eng.run().status == "complete"
    run = load_run(out)
    last = 4 + window
    assert len(fake.rounds("iops")) == last
    assert [r for r, _ in rounds_of(run, "iops")] == list(range(1, last + 1))
    res = result(run, "iops")
    assert res["steady_state"] is True and res["rounds"] == last
    assert res["window"] == list(range(5, last + 1))
    for v in res["verdicts"].values():
        assert v["reached"] and v["mean"] == pytest.approx(STEADY) and v["window"] == window


def test_every_tracking_variable_must_be_steady(tmp_path: Path) -> None:
    # "iops 4k 0/100" is flat from round 1, "iops 64k 65/35" only from round 6
    def script(call: Call) -> float:
        if call.bs == 65536 and call.read_pct == 65 and call.round < 6:
            return STEADY * (3 if call.round % 2 else 1)  # 30k, 10k, ..., 30k in round 5
        return STEADY

    fake = FakeFio(script)
    eng, out = new_engine(tmp_path, fake, [*ONLY_IOPS, "tests.iops.rounds.window=3"])
    eng.run()
    res = result(load_run(out), "iops")
    assert set(res["verdicts"]) == {"iops 4k 0/100", "iops 64k 65/35"}
    assert res["rounds"] == 8 and res["window"] == [6, 7, 8]


def test_the_round_limit_ends_a_test_that_never_gets_steady(tmp_path: Path) -> None:
    fake = FakeFio(never_steady)
    eng, out = new_engine(tmp_path, fake, [*ONLY_IOPS, "tests.iops.rounds.max=6"])
    eng.run()
    res = result(load_run(out), "iops")
    assert len(fake.rounds()) == 6
    assert res["steady_state"] is False and res["window"] == []
    assert res["summary"] == "steady state NOT reached after 6 rounds"


@pytest.mark.parametrize(("max_excursion", "rounds"), [(0.2, 5), (0.1, 7)])
def test_the_excursion_limit_is_the_profiles(
    tmp_path: Path, max_excursion: float, rounds: int
) -> None:
    # +-9 % around 10,000 (18 % data excursion, no slope): steady within 20 %, never within 10 %
    fake = FakeFio(lambda c: STEADY * (1.09 if c.round % 2 else 0.91))
    sets = [
        *ONLY_IOPS,
        "tests.iops.rounds.max=7",
        f"tests.iops.rounds.max_excursion={max_excursion}",
    ]
    eng, out = new_engine(tmp_path, fake, sets)
    eng.run()
    res = result(load_run(out), "iops")
    assert res["rounds"] == rounds and res["steady_state"] is (rounds == 5)


# --------------------------------------------------------------------------- write saturation


def _four_mib_per_round(call: Call) -> float:
    # 5,120 IOPS x 0.2 s x 4 KiB = 4 MiB: a quarter of the 16 MiB target per round
    return 5120.0


@pytest.mark.parametrize(("multiple", "rounds"), [(1.0, 4), (1.1, 5), (0.1, 1)])
def test_write_saturation_stops_once_the_multiple_is_written(
    tmp_path: Path, multiple: float, rounds: int
) -> None:
    fake = FakeFio(_four_mib_per_round)
    eng, out = new_engine(
        tmp_path, fake, [*ONLY_WSAT, f"tests.wsat.stop_written_multiple={multiple}"]
    )
    eng.run()
    t = load_run(out).test("wsat")
    assert [r.total_written_bytes for r in t.rounds] == [4 * MiB * n for n in range(1, rounds + 1)]
    assert t.purge is not None and t.precondition is None and fake.preconditions() == []
    assert result(load_run(out), "wsat")["steady_state"] is None


def test_write_saturation_stops_at_its_time_limit(tmp_path: Path, clock: FakeClock) -> None:
    # each round takes 0.2 s of I/O + 0.05 s: after round 5 (1.25 s) the 1.1 s are over,
    # long before 1000x the capacity is written
    fake = FakeFio(_four_mib_per_round, clock=clock, seconds_per_run=0.05)
    sets = [*ONLY_WSAT, "tests.wsat.stop_written_multiple=1000", "tests.wsat.max_duration=1.1s"]
    eng, out = new_engine(tmp_path, fake, sets)
    eng.run()
    assert len(load_run(out).test("wsat").rounds) == 5


# --------------------------------------------------------------------------- resume


@pytest.mark.parametrize(
    ("gap", "resume_gap", "action"),
    [
        (100.0, 300.0, "continue"),
        (100.0, 50.0, "re-precondition"),
        (1000.0, 300.0, "re-precondition"),
        (0.5, None, "continue"),  # the default: IDLE_GAP_MIN, 1 s
        (1.5, None, "re-precondition"),
    ],
)
def test_resume_gap_decides_between_continuing_and_a_new_segment(
    tmp_path: Path, clock: FakeClock, gap: float, resume_gap: float | None, action: str
) -> None:
    sets = [*ONLY_IOPS, "tests.iops.rounds.max=4", "tests.iops.rounds.window=3"]
    interrupted_after(tmp_path, FakeFio(never_steady, clock=clock), sets, rounds=2)
    clock.advance(gap)
    fake = FakeFio(never_steady, clock=clock)
    options = {} if resume_gap is None else {"resume_gap": resume_gap}
    resumed_engine(tmp_path, fake, **options).run()
    run = load_run(tmp_path / "run")
    resumes = run.manifest.resumes
    assert [(r.test, r.action, r.rounds_kept) for r in resumes] == [("iops", action, 2)]
    if action == "continue":  # no purge, no preconditioning: the rounds go on
        assert fake.preconditions() == []
        assert rounds_of(run, "iops") == [(1, 1), (2, 1), (3, 1), (4, 1)]
    else:  # preconditioned again; a new series of up to rounds.max rounds, one segment
        assert fake.preconditions("iops")
        after = rounds_of(run, "iops")[2:]
        assert [n for n, _ in after] == [3, 4, 5, 6]
        assert len({seg for _, seg in after}) == 1 and after[0][1] > 1
        assert result(run, "iops")["segment"] == after[0][1]


def test_a_resume_after_a_long_gap_preconditions_once_and_begins_segment_2(
    tmp_path: Path, clock: FakeClock
) -> None:
    # docs/resume.md: "the test is preconditioned again and a new segment of rounds begins"
    sets = [*ONLY_IOPS, "tests.iops.rounds.window=3"]
    interrupted_after(tmp_path, FakeFio(STEADY, clock=clock), sets, rounds=2)
    clock.advance(1000)
    fake = FakeFio(STEADY, clock=clock)
    resumed_engine(tmp_path, fake).run()
    run = load_run(tmp_path / "run")
    assert rounds_of(run, "iops") == [(1, 1), (2, 1), (3, 2), (4, 2), (5, 2)]
    assert len(fake.preconditions()) == 1
    assert not (tmp_path / "run/tests/iops/precondition-s3.json").exists()


def test_the_window_never_spans_a_gap(tmp_path: Path, clock: FakeClock) -> None:
    # 10,000 IOPS throughout: a window over the gap would be steady at round 3 already
    sets = [*ONLY_IOPS, "tests.iops.rounds.window=3"]
    interrupted_after(tmp_path, FakeFio(STEADY, clock=clock), sets, rounds=2)
    clock.advance(1000)
    resumed_engine(tmp_path, FakeFio(STEADY, clock=clock)).run()
    run = load_run(tmp_path / "run")
    segments = [seg for _, seg in rounds_of(run, "iops")]
    assert segments[:2] == [1, 1] and len(segments) == 5 and len(set(segments[2:])) == 1
    assert segments[2] > 1
    assert result(run, "iops")["window"] == [3, 4, 5]


def test_a_slower_drive_after_the_gap_is_judged_on_the_new_segment_alone(
    tmp_path: Path, clock: FakeClock
) -> None:
    # steady at 10,000 before the gap, at 5,000 after it
    sets = [*ONLY_IOPS, "tests.iops.rounds.window=3"]
    interrupted_after(tmp_path, FakeFio(STEADY, clock=clock), sets, rounds=2)
    clock.advance(1000)
    resumed_engine(tmp_path, FakeFio(STEADY / 2, clock=clock)).run()
    res = result(load_run(tmp_path / "run"), "iops")
    assert res["window"] == [3, 4, 5]
    assert res["verdicts"]["iops 4k 0/100"]["mean"] == pytest.approx(STEADY / 2)


def test_rounds_go_on_where_they_stopped_and_are_kept_unchanged(
    tmp_path: Path, clock: FakeClock
) -> None:
    sets = [*ONLY_IOPS, "tests.iops.rounds.max=4", "tests.iops.rounds.window=3"]
    interrupted_after(tmp_path, FakeFio(never_steady, clock=clock), sets, rounds=2)
    kept = {p.name: p.read_bytes() for p in (tmp_path / "run/tests/iops/rounds").iterdir()}
    fake = FakeFio(never_steady, clock=clock)
    resumed_engine(tmp_path, fake).run()
    assert [r.round for r in fake.rounds()] == [3, 4]
    for name, data in kept.items():
        assert (tmp_path / "run/tests/iops/rounds" / name).read_bytes() == data


def test_the_round_limit_applies_per_segment(tmp_path: Path, clock: FakeClock) -> None:
    sets = [*ONLY_IOPS, "tests.iops.rounds.max=3", "tests.iops.rounds.window=3"]
    interrupted_after(tmp_path, FakeFio(never_steady, clock=clock), sets, rounds=2)
    clock.advance(1000)
    resumed_engine(tmp_path, FakeFio(never_steady, clock=clock)).run()
    run = load_run(tmp_path / "run")
    rounds = rounds_of(run, "iops")
    assert [n for n, _ in rounds] == [1, 2, 3, 4, 5]  # 2 before the gap, 3 (the limit) after
    res = result(run, "iops")
    assert res["steady_state"] is False and res["segment"] == rounds[-1][1] > 1


def test_no_test_runs_more_than_the_round_cap_over_all_segments(
    tmp_path: Path, clock: FakeClock
) -> None:
    # a machine suspended after every round: each round begins a new segment, so the
    # per-segment limit (2) is never reached; the cap of ROUND_CAP x 2 rounds ends it
    fake = FakeFio(clock=clock)

    def script(call: Call) -> float:
        fake.pause(1000)
        return STEADY

    fake.script = script
    sets = [*ONLY_IOPS, "tests.iops.rounds.max=2", "tests.iops.rounds.window=2"]
    eng, out = new_engine(tmp_path, fake, sets)
    eng.run()
    rounds = rounds_of(load_run(out), "iops")
    assert len(rounds) == ROUND_CAP * 2
    assert [s for _, s in rounds] == list(range(1, ROUND_CAP * 2 + 1))
    assert len(fake.preconditions()) == ROUND_CAP * 2  # the first, and one per new segment


@pytest.mark.parametrize(("pause", "segments"), [(1000.0, [1, 1, 2, 2, 2]), (0.9, [1, 1, 1])])
def test_an_idle_gap_inside_a_run_starts_a_new_segment(
    tmp_path: Path, clock: FakeClock, pause: float, segments: list[int]
) -> None:
    # suspended after round 2; with resume_gap 0, gaps under IDLE_GAP_MIN (1 s) still do
    # not count.  Round 3 was started ahead during round 2: after the long pause it is
    # discarded, and round 3 runs again after preconditioning, in the new segment
    fake = FakeFio(clock=clock)

    def script(call: Call) -> float:
        if call.round == 2 and call.job.startswith("p000"):
            fake.pause(pause)
        return STEADY

    fake.script = script
    eng, out = new_engine(
        tmp_path, fake, [*ONLY_IOPS, "tests.iops.rounds.window=3"], resume_gap=0.0
    )
    eng.run()
    run = load_run(out)
    assert [s for _, s in rounds_of(run, "iops")] == segments
    assert result(run, "iops")["window"] == [3, 4, 5] if len(segments) == 5 else [1, 2, 3]
    new_segment = (tmp_path / "run/tests/iops/precondition-s2.json").exists()
    assert new_segment is (len(segments) == 5)
    # round 3 ran ahead (then waited through the pause) and was dropped, never stored
    ran = [r.round for r in fake.rounds()]
    assert ran == ([1, 2, 3, 3, 4, 5] if new_segment else [1, 2, 3])
    log = (tmp_path / "run/events.log").read_text()
    assert ("round 3, started ahead, discarded: it began after an idle gap" in log) is new_segment


@pytest.mark.parametrize("max_duration", ["24h", "60s"])
def test_write_saturation_restarts_from_its_purge_after_a_long_gap(
    tmp_path: Path, clock: FakeClock, max_duration: str
) -> None:
    # docs/resume.md: "write saturation ... after a gap longer than --resume-gap it
    # restarts from its purge" (60 s is the quick profile's own time limit)
    sets = [*ONLY_WSAT, "tests.wsat.stop_written_multiple=1"]
    sets += [f"tests.wsat.max_duration={max_duration}"]
    interrupted_after(tmp_path, FakeFio(_four_mib_per_round, clock=clock), sets, rounds=2)
    purge_before = json.loads((tmp_path / "run/tests/wsat/purge.json").read_text())
    clock.advance(1000)
    fake = FakeFio(_four_mib_per_round, clock=clock)
    resumed_engine(tmp_path, fake).run()
    run = load_run(tmp_path / "run")
    assert run.manifest.resumes[0].action == "restart"
    assert [r.round for r in fake.rounds()] == [1, 2, 3, 4]  # a whole new history of writes
    assert [r.total_written_bytes for r in run.test("wsat").rounds][-1] == 16 * MiB
    assert list((tmp_path / "run/tests/wsat").glob("discarded-*-rounds"))
    assert run.test("wsat").purge != purge_before  # purged again


def test_write_saturation_continues_after_a_short_gap(tmp_path: Path, clock: FakeClock) -> None:
    sets = [*ONLY_WSAT, "tests.wsat.stop_written_multiple=1"]
    interrupted_after(tmp_path, FakeFio(_four_mib_per_round, clock=clock), sets, rounds=2)
    fake = FakeFio(_four_mib_per_round, clock=clock)
    resumed_engine(tmp_path, fake).run()
    run = load_run(tmp_path / "run")
    assert run.manifest.resumes[0].action == "continue"
    assert [r.round for r in fake.rounds()] == [3, 4]  # the kept 8 MiB count
    assert [r.total_written_bytes for r in run.test("wsat").rounds] == [
        4 * MiB * n for n in range(1, 5)
    ]


def test_interrupted_before_its_rounds_a_test_restarts_from_its_purge(tmp_path: Path) -> None:
    pre = tmp_path / "run/tests/iops/precondition.json"
    fake = FakeFio(STEADY)
    eng, _ = new_engine(tmp_path, fake, [*ONLY_IOPS, "tests.iops.rounds.window=3"], stop=pre.exists)
    with pytest.raises(Interrupted):
        eng.run()
    assert fake.rounds() == [] and len(fake.preconditions()) == 1
    fake = FakeFio(STEADY)
    resumed_engine(tmp_path, fake).run()
    run = load_run(tmp_path / "run")
    assert run.manifest.resumes[0].action == "restart"
    assert len(fake.preconditions()) == 1  # preconditioned again, after a new purge
    assert sorted(p.name.split("-", 2)[-1] for p in pre.parent.glob("discarded-*")) == [
        "precondition.json",
        "purge.json",
    ]
    assert rounds_of(run, "iops") == [(1, 1), (2, 1), (3, 1)]


def test_a_test_whose_rounds_were_all_stored_only_gets_its_result(tmp_path: Path) -> None:
    sets = [*ONLY_IOPS, "tests.iops.rounds.max=3", "tests.iops.rounds.window=3"]
    eng, out = new_engine(tmp_path, FakeFio(never_steady), sets)
    eng.run()
    res_path = out / "tests/iops/result.json"
    before = json.loads(res_path.read_text())
    res_path.unlink()  # as if the process died right after the last round
    RunStore.open(out).update_manifest(status="interrupted")
    fake = FakeFio(never_steady)
    assert resumed_engine(tmp_path, fake).run().status == "complete"
    assert fake.runs == []  # no fio at all
    assert json.loads(res_path.read_text()) == before


def test_a_complete_run_is_not_resumed(tmp_path: Path) -> None:
    eng, out = new_engine(tmp_path, FakeFio(STEADY), [*ONLY_IOPS, "tests.iops.rounds.window=2"])
    eng.run()
    with pytest.raises(RunDirError, match="already complete"):
        check_resumable(load_run(out))


def test_a_failing_fio_job_fails_the_run_and_keeps_what_fio_printed(tmp_path: Path) -> None:
    fake = FakeFio(STEADY, error=lambda c: 5 if c.round == 2 else 0)  # EIO in round 2
    eng, out = new_engine(tmp_path, fake, ONLY_IOPS)
    with pytest.raises(DeviceError, match="error 5"):
        eng.run()
    run = load_run(out)
    assert run.manifest.status == "failed" and "error 5" in (run.manifest.error or "")
    assert [r for r, _ in rounds_of(run, "iops")] == [1]  # the failed round is not a round
    (kept,) = (out / "tests/iops/failed").glob("round-0002-*.out")
    assert '"fio version": "fio-3.33"' in kept.read_text()


# --------------------------------------------------------------------------- back to back


def _ahead_of(jobfile: str) -> str | None:
    """The hand-off directory a round's first point waits in, if it was started ahead."""
    first = next(iter(s for name, s in parse_jobfile(jobfile).items() if name != "global"))
    prerun = first.get("exec_prerun")
    return None if prerun is None else shlex.split(prerun)[4]


def test_each_round_is_started_ahead_and_taken_up_once_the_last_is_stored(
    tmp_path: Path,
) -> None:
    stored_before: list[int] = []
    fake = FakeFio(never_steady)

    def script(call: Call) -> float:
        # asked when the round's fio starts: round n + 1 starts before round n is stored
        if call.job.startswith("p000"):
            stored_before.append(len(list((tmp_path / "run/tests/iops/rounds").glob("*.json"))))
        return never_steady(call)

    fake.script = script
    eng, out = new_engine(
        tmp_path, fake, [*ONLY_IOPS, "tests.iops.rounds.max=4", "tests.iops.rounds.window=3"]
    )
    eng.run()
    assert [(r.round, r.ahead) for r in fake.rounds()] == [
        (1, False), (2, True), (3, True), (4, True)
    ]  # fmt: skip
    assert stored_before == [0, 0, 1, 2]
    # round 4 is the last whatever it measures (the round limit): none is started after it
    assert fake.discarded == [] and fake.running() == []
    # each round's first point waits for the last point of the round before it
    rounds = out / "tests/iops/rounds"
    dirs = [_ahead_of((rounds / f"{n:04d}.fio").read_text()) for n in (1, 2, 3, 4)]
    assert dirs[0] is None and len(set(dirs[1:])) == 3
    for n in (2, 3, 4):
        before = parse_jobfile((rounds / f"{n - 1:04d}.fio").read_text())
        last = [name for name in before if name != "global"][-1]
        assert before[last]["exec_postrun"].startswith(f": > {dirs[n - 1]}/done.")
    assert [r for r, _ in rounds_of(load_run(out), "iops")] == [1, 2, 3, 4]


@pytest.mark.parametrize("margin", [None, 45.0])
def test_a_point_waits_for_its_predecessor_as_long_as_the_round_may_overrun(
    tmp_path: Path, margin: float | None
) -> None:
    """A stalled I/O (a minute, in CI, on a loaded host) delays the points after it; the
    hand-off gives up no sooner than tkbench gives up on the round's fio, so a stall the
    round survives does not skip a point and fail the round."""
    options = {} if margin is None else {"fio_timeout_margin": margin}
    eng, out = new_engine(
        tmp_path,
        FakeFio(),
        [*ONLY_IOPS, "tests.iops.rounds.max=2", "tests.iops.rounds.window=2"],
        **options,
    )
    eng.run()
    expect = jobfile.STALL_MARGIN if margin is None else margin
    assert jobfile.STALL_MARGIN == 600.0  # ten minutes, as docs/methodology.md says
    for n in (1, 2):
        job = parse_jobfile((out / f"tests/iops/rounds/{n:04d}.fio").read_text())
        names = [name for name in job if name != "global"]
        for prev, name in itertools.pairwise(names):
            runtime = float(job[prev]["runtime"].removesuffix("ms")) / 1000
            timeout = float(shlex.split(job[name]["exec_prerun"])[-1])
            assert timeout == pytest.approx(runtime * 1.5 + expect, abs=0.5), name


@pytest.mark.parametrize("test", ["iops", "wsat"])
def test_a_round_that_ends_the_test_discards_the_one_started_ahead(
    tmp_path: Path, test: str
) -> None:
    # iops: steady with round 6 (flat from round 5, window 2); wsat: 16 MiB written with
    # round 4.  Either way the next round was started ahead and wrote, and is not counted
    if test == "iops":
        fake, sets, last = FakeFio(fresh_until(5)), [*ONLY_IOPS, "tests.iops.rounds.window=2"], 6
    else:
        fake = FakeFio(_four_mib_per_round)
        sets, last = [*ONLY_WSAT, "tests.wsat.stop_written_multiple=1"], 4
    eng, out = new_engine(tmp_path, fake, sets)
    eng.run()
    (discarded,) = fake.discarded
    assert (discarded.test, discarded.round, discarded.ahead) == (test, last + 1, True)
    assert discarded.written() > 0
    assert fake.running() == []
    run = load_run(out)
    kept = run.test(test).rounds
    assert [r.round for r in kept] == list(range(1, last + 1))
    assert not list((out / "tests" / test / "rounds").glob(f"{last + 1:04d}.*"))
    written = sum(r.written() for r in fake.rounds(test))
    assert kept[-1].total_written_bytes == written == sum(r.written_bytes for r in kept)
    res = result(run, test)
    assert res["rounds"] == last and res["total_written_bytes"] == written
    log = (out / "events.log").read_text()
    assert f"test {test}: round {last + 1}, started ahead, discarded: round {last} ended" in log


def test_an_interrupt_while_a_round_is_started_ahead_stops_both(
    tmp_path: Path, clock: FakeClock
) -> None:
    fake = FakeFio(never_steady, clock=clock)

    def signal_arrives(run: Run) -> None:
        if run.round == 3:  # waiting for round 3; round 4 is under way ahead of it
            assert [p.run.round for p in fake.running()] == [3, 4]
            raise KeyboardInterrupt

    fake.before_wait = signal_arrives
    sets = [*ONLY_IOPS, "tests.iops.rounds.max=6"]
    eng, out = new_engine(tmp_path, fake, sets)  # never steady: six rounds
    with pytest.raises(Interrupted):
        eng.run()
    assert fake.running() == []
    assert [r.round for r in fake.discarded] == [3, 4]
    run = load_run(out)
    assert run.manifest.status == "interrupted"
    assert rounds_of(run, "iops") == [(1, 1), (2, 1)]
    assert not list((out / ".scratch").glob("fio-*"))  # no job file left behind
    # resumed at once: rounds 3 and 4 run anew (3 not ahead: nothing runs before it)
    fake = FakeFio(never_steady, clock=clock)
    resumed_engine(tmp_path, fake).run()
    assert [(r.round, r.ahead) for r in fake.rounds()] == [
        (3, False), (4, True), (5, True), (6, True)
    ]  # fmt: skip
    assert rounds_of(load_run(out), "iops") == [(n, 1) for n in range(1, 7)]


@pytest.mark.parametrize("why", ["sequential", "fio server", "back_to_back off"])
def test_no_round_is_started_ahead_where_it_cannot_follow_safely(tmp_path: Path, why: str) -> None:
    # sequential streams start where the *stored* rounds left them; fio servers cannot
    # run the hand-off
    sets = [*ONLY_IOPS, "tests.iops.rounds.max=3", "tests.iops.rounds.window=3"]
    fake, options = FakeFio(never_steady), {}
    if why == "sequential":
        sets = ["tests.iops.enabled=false", "tests.latency.enabled=false"]
        sets += ["tests.wsat.enabled=false", "tests.throughput.rounds.max=3", *STAGED_OFF]
        sets += ["tests.throughput.rounds.window=3"]
    elif why == "fio server":
        fake = FakeFio(never_steady, hosts=("sock:/nowhere",))
    else:
        options["back_to_back"] = False
    eng, _ = new_engine(tmp_path, fake, sets, **options)
    eng.run()
    assert [(r.round, r.ahead) for r in fake.rounds()] == [(1, False), (2, False), (3, False)]
    assert fake.discarded == []


def test_the_default_resume_gap_is_the_least_idle_gap() -> None:
    from tkbench.cli.parser import build_parser
    from tkbench.engine.runs import RunRequest

    args = build_parser().parse_args(["run", "--target", "x"])
    assert args.resume_gap == engine_mod.IDLE_GAP_MIN == RunRequest().resume_gap
    assert EngineOptions().resume_gap == engine_mod.IDLE_GAP_MIN


# --------------------------------------------------------------------------- the fake itself

KEPT = Path(__file__).parent / "data" / "rundirs" / "file-a" / "tests"


def _doc(text: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(text[text.index("{") :])
    return doc


@pytest.mark.parametrize(("test", "json_plus"), [("iops", False), ("latency", True)])
def test_the_fake_answers_a_kept_job_file_as_fio_3_33_did(
    tmp_path: Path, test: str, json_plus: bool
) -> None:
    """Same document layout as the real fio 3.33 output kept beside the job file."""
    job = tmp_path / "job.fio"
    job.write_text((KEPT / test / "rounds" / "0001.fio").read_text())
    real = _doc((KEPT / test / "rounds" / "0001.out").read_text())
    fake = FakeFio(STEADY)
    fake.round = 1
    run = fake.run(job, tmp_path, json_plus=json_plus, timeout=60)
    mine = _doc(run.stdout)
    assert set(mine) == set(real)
    assert [j["jobname"] for j in mine["jobs"]] == [j["jobname"] for j in real["jobs"]]
    for m, r in zip(mine["jobs"], real["jobs"], strict=True):
        assert set(m) == set(r)
        assert m["job options"] == r["job options"]
        for d in ("read", "write", "trim"):
            assert set(m[d]) == set(r[d]), d
            for lat in ("slat_ns", "clat_ns", "lat_ns"):
                assert set(m[d][lat]) == set(r[d][lat]), (d, lat)
            assert (m[d]["io_bytes"] > 0) == (r[d]["io_bytes"] > 0), d
    assert run.output is not None and len(run.output.jobs) == len(real["jobs"])
    assert "Saving output of prerun" in run.stdout.split("{", 1)[0]


def test_every_profile_kind_has_its_rules() -> None:
    from tkbench.analysis.stoprules import KINDS, kind_named

    assert set(profile.KINDS) == set(KINDS)
    with pytest.raises(ValueError, match="unknown test kind 'hir'"):
        kind_named("hir")


def test_only_a_test_with_a_steady_state_criterion_reports_verdicts_per_round(
    tmp_path: Path,
) -> None:
    """Each round's progress event carries steady-state verdicts for an IOPS test and
    none for write saturation (no criterion: the log's ``state=`` would misread, and
    docs/automation.md says its ``round done`` lines have none)."""
    done: list[tuple[str, bool]] = []

    class Seen:
        def event(self, event: Any) -> None:
            if isinstance(event, engine_events.RoundDone):
                done.append((event.test.name, bool(event.verdicts)))

    fake = FakeFio(_four_mib_per_round, inner_progress=Seen())
    eng, _ = new_engine(
        tmp_path, fake, [*STAGED_OFF, "tests.throughput.enabled=false",
                         "tests.latency.enabled=false", "tests.wsat.stop_written_multiple=2"]
    )  # fmt: skip
    eng.run()
    assert {name for name, _ in done} == {"iops", "wsat"}
    assert all(verdicts for name, verdicts in done if name == "iops")
    assert not any(verdicts for name, verdicts in done if name == "wsat")
