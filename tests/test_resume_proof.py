"""``run --resume`` proves the target is the one the run wrote before writing it.

Real runs on tiny regular files, stopped after their first round (the engine's own
stop request, as a signal would), then resumed with something else in the target's
place: a relative target from another directory, a copy of the file, data changed
since, an edited manifest.  Each is refused with exit 3 and one line, and neither the
file in the target's place nor the run directory changes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from fakes.helpers import LoopDevices

from tests._helpers import STAGED_OFF, merged
from tkbench import cli
from tkbench.engine.runs import RunRequest, start
from tkbench.errors import Interrupted
from tkbench.rundir.store import load_run

pytestmark = pytest.mark.fio

MiB = 1 << 20
OVERRIDES = [
    "tests.iops.rounds.max_excursion=0.000001",
    "tests.iops.rounds.max=3",
    "tests.iops.rounds.window=2",
    "tests.throughput.enabled=false",
    "tests.latency.enabled=false",
    "tests.wsat.enabled=false",
    *STAGED_OFF,
]


def _interrupted(out: Path, target: str, **kw: Any) -> None:
    """A run on ``target`` (relative to the working directory), stopped after a round."""
    rounds = out / "tests" / "iops" / "rounds"

    def stop() -> bool:
        return rounds.is_dir() and any(rounds.glob("*.json"))

    req = RunRequest(
        profile="quick",
        target=target,
        out=out,
        overrides=merged(*OVERRIDES),
        stop=stop,
        **({"size": 16 * MiB, "assume_yes": True} | kw),
    )
    with pytest.raises(Interrupted):
        start(req)
    assert load_run(out).manifest.status == "interrupted"


def _sums(*paths: Path) -> dict[str, str]:
    """Every file's bytes (a run directory's, a target's), to check nothing changed."""
    out: dict[str, str] = {}
    for p in paths:
        for f in sorted([p] if p.is_file() else p.rglob("*")):
            if f.is_file():
                out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def _resume(out: Path, capsys: pytest.CaptureFixture[str], *consent: str) -> tuple[int, str]:
    capsys.readouterr()
    args = ["run", "--resume", str(out), *(consent or ["--yes"]), "--no-report"]
    code = cli.main([*args, "--resume-gap", "3600"])
    return code, capsys.readouterr().err


def _random(path: Path, size: int = 16 * MiB) -> Path:
    path.write_bytes(os.urandom(size))
    return path


def test_a_relative_target_resumed_from_another_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first, other = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    other.mkdir()
    out = tmp_path / "run"
    monkeypatch.chdir(first)
    _interrupted(out, "t.img")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["target"]["resolved"] == str(first / "t.img")
    # another directory holds a file of the same size under the same name
    monkeypatch.chdir(other)
    _random(other / "t.img")
    before = _sums(out, other / "t.img")
    code, err = _resume(out, capsys)
    assert code == 3, err
    assert err.strip().splitlines() == [
        f"tkbench: error: t.img is not the file this run wrote: {other / 't.img'} ≠ "
        f"{first / 't.img'}"
    ]
    assert _sums(out, other / "t.img") == before
    # from the directory it was started in, the run goes on
    monkeypatch.chdir(first)
    code, err = _resume(out, capsys)
    assert code == 0, err
    log = (out / "events.log").read_text()
    assert f"target: t.img is {first / 't.img'}, device" in log
    assert "target: t.img holds the data the run left" in log


def test_a_copy_in_the_files_place_is_refused_by_its_inode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    img, out = tmp_path / "t.img", tmp_path / "run"
    _interrupted(out, str(img))
    ino = img.stat().st_ino
    # the same bytes, another file: copied beside it, then renamed over it
    shutil.copyfile(img, tmp_path / "copy")
    os.replace(tmp_path / "copy", img)
    before = _sums(out, img)
    code, err = _resume(out, capsys)
    assert code == 3, err
    assert err.strip().splitlines() == [
        f"tkbench: error: {img} is not the file this run wrote: inode {img.stat().st_ino} ≠ {ino}"
    ]
    assert _sums(out, img) == before


def test_data_written_since_the_run_stopped_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    img, out = tmp_path / "t.img", tmp_path / "run"
    _interrupted(out, str(img))
    state = json.loads((out / "target.json").read_text())
    assert state["writing"] is False and len(state["digest"]) == 64
    fd = os.open(img, os.O_WRONLY)  # someone's data at its start: same file, same size
    os.pwrite(fd, b"someone's data", 0)
    os.close(fd)
    before = _sums(out, img)
    code, err = _resume(out, capsys)
    assert code == 3, err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"tkbench: error: {img} is not as this run left it: the digest")
    assert _sums(out, img) == before


def test_an_edited_manifest_naming_another_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    img, out = tmp_path / "t.img", tmp_path / "run"
    _interrupted(out, str(img))
    other = _random(tmp_path / "other.img")
    path = out / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["target"]["spec"] = str(other)  # what a hand edit or a copied run would do
    path.write_text(json.dumps(manifest))
    before = _sums(out, other)
    code, err = _resume(out, capsys)
    assert code == 3, err
    assert f"{other} is not the file this run wrote: {other} ≠ {img}" in err
    assert _sums(out, other) == before


def test_a_run_killed_while_writing_and_an_old_run_resume_and_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run killed outright leaves ``target.json`` open (``writing``): what fio wrote
    after its last digest cannot be compared, so its identity alone is checked; a run
    made before the proof was recorded resumes as before.  The log says which."""
    img, out = tmp_path / "t.img", tmp_path / "run"
    _interrupted(out, str(img))
    state = out / "target.json"
    data = json.loads(state.read_text())
    state.write_text(json.dumps({**data, "writing": True}))  # as a kill -9 leaves it
    fd = os.open(img, os.O_WRONLY)  # fio's writes after the digest, as it were
    os.pwrite(fd, os.urandom(4096), 0)
    os.close(fd)
    code, err = _resume(out, capsys)
    assert code == 0, err
    assert "the data on" in (out / "events.log").read_text()
    assert "could not be compared" in (out / "events.log").read_text()
    assert json.loads(state.read_text())["writing"] is False  # closed again at the end

    # an old run directory: no resolved path or inode in its manifest, no target.json
    img2, old = tmp_path / "u.img", tmp_path / "old"
    _interrupted(old, str(img2))
    path = old / "manifest.json"
    manifest = json.loads(path.read_text())
    for key in ("resolved", "st_dev", "st_ino", "st_gen"):
        del manifest["target"][key]
    path.write_text(json.dumps(manifest))
    (old / "target.json").unlink()
    code, err = _resume(old, capsys)
    assert code == 0, err
    assert "could not be proven to be the target the run wrote" in (old / "events.log").read_text()


@pytest.mark.root
def test_a_block_device_is_proven_by_its_resolved_path(
    loops: LoopDevices, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A loop device has no serial: an edited manifest naming another of the same size
    is refused by its path; the device the run wrote resumes."""
    first, second = loops.create(16), loops.create(16)
    out = tmp_path / "run"
    _interrupted(out, first, size=None, assume_yes=False, confirm_id=Path(first).name)
    path = out / "manifest.json"
    manifest = json.loads(path.read_text())
    assert manifest["target"]["resolved"] == first
    manifest["target"]["spec"] = second
    path.write_text(json.dumps(manifest))
    before = _sums(out, Path(second))
    code, err = _resume(out, capsys, "--confirm", Path(second).name)
    assert code == 3, err
    assert err.strip().splitlines() == [
        f"tkbench: error: {second} is not the device this run wrote: {second} ≠ {first}"
    ]
    assert _sums(out, Path(second)) == before
    manifest["target"]["spec"] = first
    path.write_text(json.dumps(manifest))
    code, err = _resume(out, capsys, "--confirm", Path(first).name)
    assert code == 0, err
    log = (out / "events.log").read_text()
    assert f"target: {first} is {first}, the device the run wrote" in log
