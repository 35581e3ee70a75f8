"""Prerequisites: what tkbench needs on this machine, what is missing, and the fix.

``tkbench doctor`` lists every prerequisite; ``run`` and ``demo`` call
:func:`require_report_stack` before they touch anything, so a day-long run
cannot end without its report.  Library code: returns findings or raises,
never prints.  The fixes name Debian packages (the README's set-up).
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import re
import tempfile
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tkbench import proc
from tkbench.errors import CommandError, ToolMissingError
from tkbench.fio.runner import MIN_FIO, _parse_version
from tkbench.typed import Typed

MIN_WEASYPRINT = (68, 0)  # weasyprint.urls.URLFetcher / URLFetcherResponse
REPORT_FONTS = ("DejaVu Sans", "DejaVu Sans Mono")  # templates/report.css
TOOL_TIMEOUT = 20.0

# what each kind of work needs, beyond fio and the report stack (see PURPOSES)
PURPOSES: dict[str, tuple[str, ...]] = {
    "run": ("fio", "weasyprint", "pango", "fonts"),
    "report": ("weasyprint", "pango", "fonts"),
    "demo": ("fio", "weasyprint", "pango", "fonts", "nbdkit"),
    "nvme": ("fio", "weasyprint", "pango", "fonts", "root", "nvme-cli"),
    "sata": ("fio", "weasyprint", "pango", "fonts", "root", "hdparm"),
    "sas": ("fio", "weasyprint", "pango", "fonts", "root", "sg3-utils", "sdparm"),
}


@dataclass(frozen=True)
class Finding(Typed):
    """One prerequisite: whether it is there, what was found, how to fix it."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    needed: bool = False


def _apt(*packages: str) -> str:
    return f"apt-get install {' '.join(packages)}"


# --------------------------------------------------------------------------- checks


def check_fio(binary: str = "fio") -> Finding:
    path = proc.which(binary)
    fix = _apt("fio") + f" (fio {MIN_FIO[0]}.{MIN_FIO[1]} or newer)"
    if path is None:
        return Finding("fio", False, "not found on PATH", fix)
    try:
        out = proc.run([path, "--version"], timeout=TOOL_TIMEOUT, check=False).stdout.strip()
    except (CommandError, ToolMissingError) as exc:
        return Finding("fio", False, f"{path} does not run: {exc}", fix)
    if _parse_version(out) < MIN_FIO:
        return Finding("fio", False, f"{out or 'unknown version'} ({path}) is too old", fix)
    return Finding("fio", True, f"{out} ({path})")


def _weasyprint() -> tuple[Any, BaseException | None]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import weasyprint
    except (ImportError, OSError) as exc:  # OSError: a shared library (Pango) is missing
        return None, exc
    return weasyprint, None


def check_weasyprint() -> Finding:
    fix = f"pip install 'weasyprint>={MIN_WEASYPRINT[0]}' (into tkbench's environment)"
    wp, exc = _weasyprint()
    if wp is None:
        if isinstance(exc, OSError):  # installed, but Pango is not
            return Finding("WeasyPrint", False, "cannot load Pango", PANGO_FIX)
        return Finding("WeasyPrint", False, f"cannot be imported: {exc}", fix)
    version = str(getattr(wp, "__version__", "0"))
    numbers = tuple(int(x) for x in re.findall(r"\d+", version)[:2])
    if numbers < MIN_WEASYPRINT:
        return Finding("WeasyPrint", False, f"{version} is older than 68", fix)
    try:
        from weasyprint.urls import URLFetcher, URLFetcherResponse  # noqa: F401
    except ImportError as err:
        return Finding("WeasyPrint", False, f"{version}: {err}", fix)
    return Finding("WeasyPrint", True, version)


PANGO_FIX = "apt-get install libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0"


def check_pango() -> Finding:
    fix = PANGO_FIX
    wp, exc = _weasyprint()
    if wp is None:
        if isinstance(exc, OSError):
            return Finding("Pango", False, f"not loadable: {str(exc).splitlines()[0]}", fix)
        return Finding("Pango", False, "unknown (WeasyPrint is missing)", fix)
    try:
        from weasyprint.text.ffi import pango

        n = int(pango.pango_version())  # 15006 for 1.50.6
        version = f"{n // 10000}.{n // 100 % 100}.{n % 100}"
    except Exception as err:  # an internal layout of WeasyPrint we only peek at
        return Finding("Pango", True, f"loaded (version unknown: {type(err).__name__})")
    return Finding("Pango", True, version)


FONT_FILES = {"DejaVu Sans": "DejaVuSans.ttf", "DejaVu Sans Mono": "DejaVuSansMono.ttf"}
FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", "~/.local/share/fonts", "~/.fonts")


def _font_file(file_name: str) -> bool:
    for d in FONT_DIRS:
        root = Path(d).expanduser()
        with contextlib.suppress(OSError):
            if root.is_dir() and next(root.rglob(file_name), None) is not None:
                return True
    return False


def check_fonts() -> Finding:
    """The report's fonts, asked of fontconfig (``fc-match``) or, without it, looked
    for in the usual font directories."""
    fix = _apt("fonts-dejavu-core")
    fc = proc.which("fc-match")
    missing = []
    for family in REPORT_FONTS:
        if fc is None:
            found = _font_file(FONT_FILES[family])
        else:
            try:
                done = proc.run([fc, "-f", "%{family}", family], timeout=TOOL_TIMEOUT, check=False)
                found = family in done.stdout.split(",")
            except CommandError:
                found = _font_file(FONT_FILES[family])
        if not found:
            missing.append(family)
    if missing:
        return Finding("fonts", False, f"{', '.join(missing)} not installed", fix)
    return Finding("fonts", True, ", ".join(REPORT_FONTS))


def check_nbdkit() -> Finding:
    from tkbench.emulator.launcher import check_nbdkit as _check

    try:
        path = _check()
    except (ToolMissingError, CommandError) as exc:
        what = str(exc).split(":")[0]
        return Finding("nbdkit", False, what, _apt("nbdkit", "nbdkit-plugin-python"))
    return Finding("nbdkit", True, f"{path}, python plugin loads")


def _tool(
    name: str, binaries: Iterable[str], package: str, version_argv: list[str] | None, purpose: str
) -> Finding:
    found = [(b, proc.which(b)) for b in binaries]
    absent = [b for b, p in found if p is None]
    if absent:
        return Finding(name, False, f"{', '.join(absent)} not found ({purpose})", _apt(package))
    detail = ", ".join(str(p) for _, p in found)
    if version_argv:
        try:
            done = proc.run(version_argv, timeout=TOOL_TIMEOUT, check=False)
            first = (done.stdout.strip() or done.stderr.strip()).splitlines()
            if first:
                detail = f"{first[0].strip()[:60]} ({detail})"
        except CommandError:
            pass
    return Finding(name, True, detail)


def check_root() -> Finding:
    if os.geteuid() == 0:
        return Finding("root", True, "running as root")
    return Finding(
        "root", False, "not root (block devices and their purge need it)", "run with sudo"
    )


def check_direct_io(directory: Path) -> Finding:
    """Whether a file in ``directory`` can be written with O_DIRECT (fio's direct=1)."""
    name = f"O_DIRECT in {directory}"
    fix = (
        "put targets on a filesystem with direct I/O (not tmpfs), "
        "or pass --set workload.direct=false"
    )
    if not directory.is_dir():
        return Finding(name, False, "not a directory", "give an existing directory with --dir")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tkbench-doctor-", dir=directory)
    except OSError as exc:
        return Finding(name, False, f"cannot create a file: {exc.strerror}", fix)
    try:
        os.close(fd)
        buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT wants
        buf.write(b"\0" * 4096)
        try:
            dfd = os.open(tmp, os.O_WRONLY | os.O_DIRECT)
        except OSError as exc:
            if exc.errno == errno.EINVAL:
                return Finding(name, False, "the filesystem refuses O_DIRECT", fix)
            return Finding(name, False, f"cannot open: {exc.strerror}", fix)
        try:
            os.write(dfd, buf)
        except OSError as exc:
            return Finding(name, False, f"O_DIRECT write failed: {exc.strerror}", fix)
        finally:
            os.close(dfd)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return Finding(name, True, "a 4 KiB O_DIRECT write works")


CHECKS: dict[str, Callable[[], Finding]] = {
    "fio": check_fio,
    "weasyprint": check_weasyprint,
    "pango": check_pango,
    "fonts": check_fonts,
    "nbdkit": check_nbdkit,
    "nvme-cli": lambda: _tool(
        "nvme-cli", ["nvme"], "nvme-cli", ["nvme", "version"], "NVMe purge and write cache"
    ),
    "smartctl": lambda: _tool(
        "smartctl", ["smartctl"], "smartmontools", ["smartctl", "--version"], "health data"
    ),
    "hdparm": lambda: _tool(
        "hdparm", ["hdparm"], "hdparm", ["hdparm", "-V"], "SATA purge and write cache"
    ),
    "sg3-utils": lambda: _tool(
        "sg3-utils", ["sg_format", "sg_sanitize"], "sg3-utils", None, "SAS/SCSI purge"
    ),
    "sdparm": lambda: _tool(
        "sdparm", ["sdparm"], "sdparm", ["sdparm", "--version"], "SAS/SCSI write cache"
    ),
    "root": check_root,
}


def diagnose(purposes: Iterable[str] = ("run",), directory: Path | None = None) -> list[Finding]:
    """Every prerequisite, each marked ``needed`` when ``purposes`` need it.

    ``directory``: also check O_DIRECT there (then needed).
    """
    wanted: set[str] = set()
    for p in purposes:
        if p not in PURPOSES:
            raise ValueError(f"unknown purpose {p!r}")
        wanted.update(PURPOSES[p])
    out = []
    for key, check in CHECKS.items():
        f = check()
        out.append(Finding(f.name, f.ok, f.detail, f.fix, key in wanted))
    if directory is not None:
        f = check_direct_io(directory)
        out.append(Finding(f.name, f.ok, f.detail, f.fix, True))
    return out


def missing(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.needed and not f.ok]


def require_report_stack() -> None:
    """Raise :class:`ToolMissingError` with the fix when the report cannot be rendered."""
    for check in (check_weasyprint, check_pango, check_fonts):
        f = check()
        if not f.ok:
            raise ToolMissingError(
                f"the report cannot be rendered: {f.name}: {f.detail}; fix: {f.fix} "
                "(or pass --no-report)"
            )
