"""The run-level parts of the report: device, platform, run, set-up, warnings (pure).

This is the report header in the manner of the SNIA PTS, read from the manifest
and the tests' records.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from tkbench.analysis import kind_of
from tkbench.conformance import judge_run
from tkbench.conformance.pts import Judgement, stored_variant
from tkbench.device.cacherecord import describe as write_cache_text
from tkbench.kinds.results.analysed import Analysed, AnalysedRun
from tkbench.plan.build import pattern_text
from tkbench.report import devicefacts, fmt
from tkbench.report.model import COMPLETE, PtsClaim, Row, TestReport
from tkbench.report.options import DEFAULT_TITLE, ReportOptions
from tkbench.report.procedure import outstanding, precondition_text, purge_text, stop_rule
from tkbench.rundir.records import Manifest, Resume
from tkbench.rundir.store import RunData


def is_emulated(manifest: Manifest) -> bool:
    device = manifest.target.device
    return device.emulated or "emulator" in (device.model or "").lower()


def is_synthetic(manifest: Manifest) -> bool:
    return manifest.synthetic


def text_or(value: object, default: str = "unknown") -> str:
    if value is None or value == "":
        return default
    return str(value)


def device_rows(manifest: Manifest) -> tuple[Row, ...]:
    target = manifest.target
    device = target.device
    cap = target.capacity_bytes or target.capacity
    logical = target.logical_sector or device.logical_sector
    physical = device.physical_sector
    rows = [
        devicefacts.manufacturer_row(manifest),
        Row("Model", text_or(device.model)),
        Row("Serial number", text_or(device.serial)),
        Row("Firmware", text_or(device.firmware)),
        Row("User capacity", fmt.capacity(cap)),
        Row(
            "Sector size (logical / physical)",
            f"{text_or(logical, '?')} / {text_or(physical, '?')} bytes",
        ),
        Row("Interface", text_or(device.interface)),
        *devicefacts.link_rows(manifest),
        # the kernel's flush policy; what tkbench set and verified is under Test set-up
        Row("Kernel write-cache mode (sysfs)", text_or(device.write_cache)),
        Row("Target", f"{text_or(target.spec)} ({text_or(target.kind)})", mono=True),
    ]
    if device.emulator:
        rows.append(Row("Emulator", device.emulator))
    return tuple(rows)


def platform_rows(manifest: Manifest) -> tuple[Row, ...]:
    host = manifest.host
    servers = manifest.fio_servers
    rows = [
        Row("Host name", text_or(host.hostname)),
        Row("CPU", f"{text_or(host.cpu)} ({text_or(host.cpus, '?')} logical CPUs)"),
        Row("Memory", fmt.size(host.memory_bytes) if host.memory_bytes else "unknown"),
        Row("Operating system", text_or(host.os)),
        Row("Kernel", f"{text_or(host.kernel)} ({text_or(host.machine, '?')})"),
        Row("fio", text_or(manifest.fio_version)),
        Row("tkbench", text_or(manifest.tkbench_version)),
    ]
    if servers:
        rows.append(Row("fio servers", ", ".join(servers)))
    return tuple(rows)


def run_rows(manifest: Manifest, options: ReportOptions, generated: float) -> tuple[Row, ...]:
    profile = manifest.profile
    started, ended = manifest.started, manifest.ended
    cmd = manifest.command_line
    rows = [
        devicefacts.test_id_row(manifest),
        Row(
            "Profile",
            f"{text_or(profile.name)}: {text_or(profile.resolved.get('description'), '')}",
        ),
        Row("Profile file", text_or(profile.source), mono=True),
        Row("Command line", shlex.join(cmd) if cmd else "unknown", mono=True),
        Row("Run started", fmt.when(started or None)),
        Row("Run ended", fmt.when(ended or None)),
    ]
    if started and ended:
        rows.append(Row("Run duration", fmt.duration(ended - started)))
    rows.append(Row("Run status", text_or(manifest.status)))
    for r in manifest.resumes:
        rows.append(
            Row(
                "Resumed",
                f"{fmt.when(r.at or None)}: test {text_or(r.test)}, "
                f"{text_or(r.action)} ({_kept(r)} kept)",
            )
        )
    rows.append(Row("Report generated", fmt.when(generated)))
    if options.operator:
        rows.append(Row("Operator", options.operator))
    if options.organisation:
        rows.append(Row("Organisation", options.organisation))
    return tuple(rows)


def _kept(r: Resume) -> str:
    if r.parts_kept is not None:
        return f"{r.parts_kept} part{'s' if r.parts_kept != 1 else ''} of the stage"
    return f"{r.rounds_kept} rounds"


def setup_rows(run: RunData, judged: Judgement | None = None) -> tuple[Row, ...]:
    """SNIA-style set-up parameters, test by test where they differ (``judged``: the
    run's judgement, for the operator's choices it states; judged here if not given)."""
    if judged is None:
        judged = judge_run(run, run.write_cache)

    def per_test(value: Any) -> str:
        groups: dict[str, list[str]] = {}
        for t in run.tests:
            groups.setdefault(value(t), []).append(t.plan.title or t.name)
        if len(groups) == 1:
            return next(iter(groups))
        return "; ".join(f"{', '.join(names)}: {v}" for v, names in groups.items())

    rows = [
        Row(
            "Data pattern",
            per_test(
                lambda t: pattern_text(
                    t.plan.workload.data_pattern, t.plan.workload.compress_percentage
                )
            ),
        ),
        Row("ActiveRange", per_test(lambda t: f"{t.plan.active_range:g} %")),
        Row("Outstanding I/O", per_test(lambda t: outstanding(t.plan))),
        Row("Purge", per_test(lambda t: purge_text(t.plan, t.purge))),
        Row(
            "Preconditioning",
            per_test(lambda t: precondition_text(t.plan, t.precondition)),
        ),
        Row("Volatile write cache", write_cache_text(run.write_cache)),
        Row(
            "Steady-state criterion",
            per_test(
                lambda t: (
                    stop_rule(t.plan, 0) if kind_of(t.plan).has_steady_state else "none (by design)"
                )
            ),
        ),
        *_choice_rows(judged),
        Row(
            "Units",
            "IOPS = I/O operations per second; MB/s = 10⁶ bytes per second; "
            "GB = 10⁹ bytes; response times in ms; block sizes in KiB (4k = 4,096 bytes)",
        ),
    ]
    return tuple(rows)


def _choice_rows(judged: Judgement) -> list[Row]:
    """The operator choices the PTS leaves open, as the run made them (stated, never
    counted as departures)."""
    if judged.variant is None or not judged.choices:
        return []
    return [
        Row(
            f"Operator choices ({judged.name})",
            "; ".join(c.words() for c in judged.choices),
        )
    ]


def document_title(title: str, judged: Judgement) -> str:
    """The report's title, page headers and PDF metadata (:func:`title_of`)."""
    if "PTS" not in title:
        return title
    return title_of(title, judged)


# the requirements of a steady-state rule, and how a departure from each is said short
STEADY_RULE = {
    "steady-state window": "{}-round window",
    "data excursion limit": "{} data excursion",
    "slope excursion limit": "{} slope excursion",
}


def steady_rules(judged: Judgement) -> dict[str, str]:
    """Per test whose steady-state rule departs from the PTS's, how ("3-round window"):
    its STEADY STATE is tkbench's by that rule, which its badge and page 1 say."""
    out: dict[str, list[str]] = {}
    for d in judged.departures:
        said = STEADY_RULE.get(d.requirement)
        if said is not None and d.test is not None:
            out.setdefault(d.test, []).append(said.format(d.actual.removesuffix(" rounds")))
    return {test: ", ".join(rules) for test, rules in out.items()}


def title_of(title: str, judged: Judgement) -> str:
    """A title that names the SNIA PTS stands only for a run that conforms, with the
    version judged against; a departing run's says how many points it departs in,
    whatever the profile (or one it extends) or the command line called it.  A title
    that names no PTS is kept."""
    if "PTS" not in title:
        return title
    if judged.conforms:
        return f"{judged.name} Solid State Storage Performance Report"
    return judged.claim or DEFAULT_TITLE


def run_status_text(manifest: Manifest) -> str:
    status = manifest.status
    error = manifest.error
    if status == "complete":
        return "The run is complete."
    if status == "failed":
        why = f": {error}" if error else ""
        return f"The run FAILED{why}. The report shows what was measured before the failure."
    if status == "interrupted":
        return (
            "The run was INTERRUPTED. The report shows the rounds completed before the "
            "interruption; the run can be resumed."
        )
    return (
        "The run has not finished (it was still running, or was killed). The report shows "
        "what was stored."
    )


def alerts(manifest: Manifest) -> tuple[str, ...]:
    """What a reader must know before any number: synthetic, emulated, incomplete."""
    out = []
    if is_synthetic(manifest):
        out.append(
            "SYNTHETIC DATA — NOT A MEASUREMENT. No drive was tested for this report: every "
            "number was generated by tkbench's synthetic run generator to show and test the "
            "report. Do not use these numbers for any decision."
        )
    if is_emulated(manifest):
        out.append(
            "EMULATED DRIVE. The drive under test was tkbench's bundled SSD emulator, not a real "
            "drive: the numbers describe the emulator's model of an SSD, not any product."
        )
    if manifest.status != "complete":
        out.append(run_status_text(manifest))
    return tuple(out)


def flag(manifest: Manifest) -> str:
    """The short warning repeated in every page header."""
    parts = []
    if is_synthetic(manifest):
        parts.append("SYNTHETIC DATA — NOT A MEASUREMENT")
    if is_emulated(manifest):
        parts.append("EMULATED DRIVE — NOT A REAL DEVICE")
    status = manifest.status
    if status != "complete":
        parts.append(f"{str(status or 'unfinished').upper()} RUN")
    return " · ".join(parts)


def warnings(run: RunData, tests: Sequence[TestReport]) -> tuple[str, ...]:
    """Caveats that qualify the numbers."""
    m = run.manifest
    out = []
    if m.target.kind == "volume":
        out.append(
            "A volume benchmark: the target was a directory on a mounted filesystem, and only "
            "tkbench's own test files in it were written. The results describe the filesystem "
            "and the drive beneath it as they are used; this is no SNIA PTS test and makes no "
            "PTS claim."
        )
    if m.target.kind == "file" or m.target.device.interface == "file":
        out.append(
            "The target was a regular file: the results describe the file system and the "
            "drive beneath it, not a drive on its own."
        )
    if stored_variant(m) is None:
        # no PTS claim to list these under (pts_claim): they qualify the numbers still
        non_compliant = [
            t.plan.title or t.name for t in run.tests if t.purge and not t.purge.pts_compliant
        ]
        if non_compliant:
            out.append(
                "The purge before "
                + ", ".join(str(n) for n in non_compliant)
                + " was not a PTS-compliant purge."
            )
        cache = run.write_cache
        if cache is not None and not cache.applies and cache.requested != "unchanged":
            out.append(
                f"The profile asks for the volatile write cache {cache.requested}, which did "
                f"not apply: {cache.reason}."
            )
    not_steady = [t.title for t in tests if t.steady is False]
    if not_steady:
        out.append(
            "Steady state was NOT reached in: "
            + ", ".join(not_steady)
            + ". Their numbers are shown, marked, and are not steady-state results."
        )
    return tuple(out)


def summary_sentences(analysed: AnalysedRun, tests: Sequence[TestReport]) -> tuple[str, ...]:
    """Page 1's summary (``analysed``: the run's results, which the chapters read too:
    a repeated test's repeatability is computed once for both)."""
    run = analysed.run
    m = run.manifest
    device = m.target.device
    cap = m.target.capacity_bytes
    lines = [
        f"This report presents the results of the tkbench profile "
        f"“{text_or(m.profile.name)}” on {text_or(device.model)} "
        f"(serial number {text_or(device.serial)}, "
        f"firmware {text_or(device.firmware)}, "
        f"{fmt.gb(cap)} user capacity), run from {fmt.when(m.started or None)} "
        f"to {fmt.when(m.ended or None)}. {run_status_text(m)}"
    ]
    if m.target.kind == "volume":
        # page 1 shows the first paragraph: the volume and every test's result in it
        sweeps = {r.name: r.sweep.sentence for r in tests if r.sweep}  # a bulk-I/O sweep's
        sweeps |= {r.name: r.copy.sentence for r in tests if r.copy}  # a copy test's
        sweeps |= {r.name: r.vfile.sentence for r in tests if r.vfile}  # a virtual file's
        said = [sweeps.get(a.name) or _repeat_sentence(a) for a in analysed.tests if a.test.rounds]
        return (" ".join([_volume_sentence(m), *said]), *said)
    for t in tests:
        verdict = t.verdict or t.status_text
        status = "" if t.status == COMPLETE else f" [{t.status_text}]"
        lines.append(f"{t.title}: {verdict}{status}")
    return tuple(lines)


def _volume_sentence(m: Manifest) -> str:
    device = m.target.device
    return (
        f"How fast is this volume? tkbench ran “{text_or(m.profile.name)}” on "
        f"{text_or(device.path)} ({text_or(device.filesystem)} on "
        f"{text_or(device.source)}, {fmt.gb(m.target.capacity_bytes)}), from "
        f"{fmt.when(m.started or None)} to {fmt.when(m.ended or None)}, writing only its own "
        f"test files, which it removed afterwards. {run_status_text(m)}"
    )


def _repeat_sentence(a: Analysed) -> str:
    """A repeated test in a customer's words: the average and how much the runs differ."""
    t = a.test
    parts = []
    for rep in a.repeats.values():
        n = len(rep.runs)
        text = f"{rep.mean:,.1f} MiB/s on average over {n} run{'s' if n != 1 else ''}"
        if n > 1 and rep.mean_abs_dev_pct is not None:
            text += f", the runs within ±{rep.mean_abs_dev_pct:.1f} % of it"
        parts.append(text)
    until = a.until
    tail = f" ({until.sentence()})" if until is not None else ""
    return f"{t.plan.title or t.name}: {'; '.join(parts)}{tail}."


def device_line(manifest: Manifest) -> str:
    """Model, serial number and firmware: the running footer of every page."""
    device = manifest.target.device
    return f"{text_or(device.model)} · S/N {text_or(device.serial)} · FW {text_or(device.firmware)}"


def run_notes(manifest: Manifest) -> tuple[str, ...]:
    """Notes of the target's identification and of the planning."""
    notes = list(manifest.target.device.notes)
    notes += [n for n in manifest.plan_notes if n]
    return tuple(notes)


def pts_claim(run: RunData, titles: Sequence[str] = ()) -> PtsClaim:
    """Conformance to the SNIA PTS variant the run's profile declares, judged from what
    the run recorded: the statement and every departure, for the first page
    (``titles``: the report's tests', which page 1 counts the departures by)."""
    return pts_claim_of(judge_run(run, run.write_cache), titles)


def pts_claim_of(judged: Judgement, titles: Sequence[str] = ()) -> PtsClaim:
    """The first page's PTS claim of a judgement (a departure several tests share is
    said once, naming them; page 1 counts them by the tests of ``titles``)."""
    groups = tuple((tests, tuple(items)) for tests, items in judged.groups())
    return PtsClaim(
        variant=judged.variant,
        conforms=judged.conforms,
        statement=judged.statement(),
        groups=groups,
        counts=departure_counts(groups, titles),
    )


ALL_TESTS = "All tests"  # the group of a departure every test shares (Judgement.merged)


def departure_counts(
    groups: Sequence[tuple[str, Sequence[str]]], titles: Sequence[str]
) -> tuple[tuple[str, int], ...]:
    """Page 1's count of the departures: first those of all tests, then per test of
    ``titles`` (in their order) how many concern it -- a group names its tests joined
    by ", ", and one several tests share counts for each -- then, as they stand, the
    groups that name none of them (a test not run, an old run's untitled test)."""
    out = [(tests, len(items)) for tests, items in groups if tests == ALL_TESTS]
    named = {ALL_TESTS}
    for title in titles:
        n = 0
        for tests, items in groups:
            if f", {title}, " in f", {tests}, ":
                n += len(items)
                named.add(tests)
        if n:
            out.append((title, n))
    out += [(tests, len(items)) for tests, items in groups if tests not in named]
    return tuple(out)
