"""The PTS report header's device facts beside model and serial: manufacturer, host
link (PCIe speed and width, or the host bus adapter's driver), form factor, and the
run's test ID (pure).

They come from the target identity tkbench recorded when it identified the drive
(:mod:`tkbench.device.facts`).  A regular file, a filesystem volume, an NBD export
or a loop device has none of them ("not applicable"); a run made before tkbench
recorded them says so rather than leave a blank.
"""

from __future__ import annotations

from tkbench.device.facts import link_text
from tkbench.report.model import Row
from tkbench.rundir.records import Manifest

NOT_RECORDED = "not recorded (the run was made before tkbench recorded it)"


def not_applicable(manifest: Manifest) -> str | None:
    """Why the target has no maker, link or form factor of its own (None: it has)."""
    device = manifest.target.device
    kind = manifest.target.kind
    if manifest.synthetic or kind == "synthetic":
        return "not applicable (synthetic data)"
    if kind == "file" or device.interface == "file":
        return "not applicable (a regular file)"
    if kind == "volume" or device.interface == "volume":
        return "not applicable (a filesystem volume)"
    if kind == "nbd" or device.interface == "nbd":
        if device.emulated:
            return "not applicable (the bundled SSD emulator)"
        return "not applicable (an NBD export)"
    if device.interface == "loop":
        return "not applicable (a loop device)"
    return None


def manufacturer_row(manifest: Manifest) -> Row:
    device = manifest.target.device
    na = not_applicable(manifest)
    if na is not None:
        return Row("Manufacturer", na)
    if not device.manufacturer_recorded:
        return Row("Manufacturer", NOT_RECORDED)
    name = device.manufacturer or "unknown"
    source = device.manufacturer_source
    if name == "unknown":
        return Row("Manufacturer", f"unknown ({source})" if source else "unknown")
    return Row("Manufacturer", f"{name} (from {source})" if source else name)


def link_rows(manifest: Manifest) -> tuple[Row, ...]:
    """Host link, and the form factor where the drive reports one."""
    device = manifest.target.device
    na = not_applicable(manifest)
    if na is not None:
        return (Row("Host link", na),)
    if not device.host_link_recorded:
        return (Row("Host link", NOT_RECORDED),)
    rows = [Row("Host link", link_text(device.host_link))]
    if device.form_factor:
        rows.append(Row("Form factor", device.form_factor))
    return tuple(rows)


def test_id_row(manifest: Manifest) -> Row:
    """The run's UUID: the test ID wherever the run directory is copied."""
    if manifest.run_id:
        return Row("Test ID (run UUID)", manifest.run_id, mono=True)
    return Row("Test ID (run UUID)", "none (the run was made before tkbench gave runs an ID)")
