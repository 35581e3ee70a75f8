"""The report header's device facts: manufacturer, host link, form factor, temperature
limits (tkbench.device.facts), read at identification time.

NVMe, SATA and SAS drives through fixture sysfs trees in a temporary directory and
the FAKE drive tools of tests/fakes (this machine has none of those drives); the real
sysfs of this machine where it has something to read (its virtio disk), and real loop
devices, which have none of these facts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fakes import helpers
from fakes.helpers import FakeTools, LoopDevices

from tkbench.device import identify
from tkbench.device.facts import brand_of_model, host_link, link_text, manufacturer
from tkbench.device.sysfs import Sysfs
from tkbench.report import devicefacts
from tkbench.rundir.records import Manifest, TargetRecord

# --------------------------------------------------------------------------- manufacturer


@pytest.mark.parametrize(
    ("model", "brand"),
    [
        ("Samsung SSD 980 PRO 1TB", "Samsung"),
        ("SAMSUNG MZ7LH960HAJR-00005", "Samsung"),
        ("WDC WDS500G2B0A-00SM50", "Western Digital"),
        ("WD_BLACK SN850X 2000GB", "Western Digital"),
        ("Micron_5300_MTFDDAK960TDS", "Micron"),
        ("MTFDDAK960TDS-1AW1ZABYY", "Micron"),
        ("ST4000NM0035-1V4107", "Seagate"),
        ("SK hynix PC401 NVMe 512GB", "SK hynix"),
        ("KIOXIA KCD6XLUL3T84", "KIOXIA"),
        ("INTEL SSDPE2KX040T8", "Intel"),
        # no brand word, no part-number convention: not guessed
        ("CT1000MX500SSD1", None),
        ("STORAGE DEVICE", None),  # "ST" without a digit is no Seagate part number
        ("unknown", None),
    ],
)
def test_brand_of_model(model: str, brand: str | None) -> None:
    assert brand_of_model(model) == brand


def test_manufacturer_sources_in_order() -> None:
    assert manufacturer("Samsung SSD 980", pci_vendor=0x1987) == ("Samsung", "the model name")
    # an unknown model: the controller's PCI vendor, named as such
    name, source = manufacturer("MP600 2TB", pci_vendor=0x1987)
    assert name == "Phison" and "controller's PCI vendor ID 0x1987" in source
    assert manufacturer("X447_S1633800AMD", scsi_vendor="NETAPP  ")[0] == "NETAPP"
    # "ATA" in INQUIRY is the SCSI layer's placeholder for a SATA drive, not a maker
    assert manufacturer("CT1000MX500SSD1", scsi_vendor="ATA")[0] == "unknown"
    name, source = manufacturer("Some Drive", pci_vendor=0x1234)
    assert name == "unknown" and "0x1234 is not in tkbench's table" in source


# --------------------------------------------------------------------------- fixture sysfs trees


def test_nvme_facts_from_identify_and_sysfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = helpers.fake_nvme_sysfs(tmp_path / "sys")
    FakeTools(tmp_path, monkeypatch)  # FAKE nvme-cli: id-ctrl vid 0x144d, wctemp 358 K
    ident = identify("/dev/nvme0n1", sysfs_root=root)
    assert (ident.manufacturer, ident.manufacturer_source) == ("Samsung", "the model name")
    assert ident.host_link == {
        "kind": "nvme",
        "controller": "nvme0",
        "transport": "pcie",
        "pci_address": "0000:00:04.0",
        "driver": "nvme",
        "current_link_speed": "8.0 GT/s PCIe",
        "max_link_speed": "16.0 GT/s PCIe",
        "current_link_width": 4,
        "max_link_width": 4,
    }
    assert link_text(ident.host_link) == (
        "PCIe 8.0 GT/s PCIe x4 (the device supports up to 16.0 GT/s PCIe x4) at PCI 0000:00:04.0"
    )
    assert ident.form_factor is None  # NVMe reports none
    assert ident.warning_temp_c == 85.0 and ident.critical_temp_c == 85.0
    assert ident.to_dict()["host_link"]["current_link_width"] == 4


def test_nvme_vendor_id_from_sysfs_without_nvme_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = helpers.fake_nvme_sysfs(tmp_path / "sys")
    ctrl = root / "devices" / "pci0000:00" / "0000:00:04.0" / "nvme" / "nvme0"
    (ctrl / "model").write_text("MP600 2TB\n")  # no brand word in the model
    (root / "devices" / "pci0000:00" / "0000:00:04.0" / "vendor").write_text("0x1987\n")
    FakeTools(tmp_path, monkeypatch, tools=())
    ident = identify("/dev/nvme0n1", sysfs_root=root)
    assert ident.manufacturer == "Phison"
    assert "PCI vendor ID 0x1987" in (ident.manufacturer_source or "")
    assert ident.warning_temp_c is None  # no id-ctrl: the thresholds are unknown


def test_nvme_link_at_full_speed_and_over_fabrics(tmp_path: Path) -> None:
    full = helpers.fake_nvme_sysfs(tmp_path / "a", link=("16.0 GT/s PCIe", 4, "16.0 GT/s PCIe", 4))
    assert link_text(host_link(Sysfs(full), "nvme0n1", "nvme")) == (
        "PCIe 16.0 GT/s PCIe x4 at PCI 0000:00:04.0"
    )
    tcp = helpers.fake_nvme_sysfs(tmp_path / "b", transport="tcp")
    link = host_link(Sysfs(tcp), "nvme0n1", "nvme")
    assert link is not None and "current_link_speed" not in link
    assert link_text(link) == "NVMe over TCP (no PCIe link)"
    head = helpers.fake_nvme_multipath_sysfs(tmp_path / "c")
    assert link_text(host_link(Sysfs(head), "nvme0n1", "nvme")) == (
        "NVMe; its controller was not found in sysfs"
    )


def test_sata_facts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = helpers.fake_scsi_sysfs(
        tmp_path / "sys", "sda", "8:0", vendor="ATA", model="Samsung SSD 860", rev="4B6Q",
        transport="ata",
    )  # fmt: skip
    fakes = FakeTools(tmp_path, monkeypatch)
    fakes.configure(smartctl={"kind": "ata"})  # FAKE smartctl: form factor 2.5 inches
    ident = identify("/dev/sda", sysfs_root=root)
    assert ident.manufacturer == "Samsung"
    assert ident.form_factor == "2.5 inches"
    assert ident.host_link == {
        "kind": "hba", "pci_address": "0000:00:1f.2", "driver": "ahci", "sata_speed": "6.0 Gbps",
    }  # fmt: skip
    assert link_text(ident.host_link) == (
        "host bus adapter driver ahci at PCI 0000:00:1f.2, SATA link 6.0 Gbps"
    )
    assert ident.warning_temp_c is None  # smartctl -a of ATA gives no limit


def test_sas_facts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = helpers.fake_scsi_sysfs(
        tmp_path / "sys", "sdb", "8:16", vendor="SEAGATE", model="XS800ME70004", rev="0004",
        transport="sas",
    )  # fmt: skip
    fakes = FakeTools(tmp_path, monkeypatch)
    fakes.configure(smartctl={"kind": "scsi"})
    ident = identify("/dev/sdb", sysfs_root=root)
    assert ident.manufacturer == "Seagate"
    assert link_text(ident.host_link) == (
        "host bus adapter driver mpt3sas at PCI 0000:03:00.0, adapter on PCIe 8.0 GT/s PCIe x8"
    )
    assert ident.warning_temp_c == 70.0  # the drive trip temperature


def test_sas_vendor_outside_the_brand_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = helpers.fake_scsi_sysfs(
        tmp_path / "sys", "sdb", "8:16", vendor="NETAPP", model="X447_S1633800AMD", rev="NA01",
        transport="sas",
    )  # fmt: skip
    FakeTools(tmp_path, monkeypatch, tools=())
    ident = identify("/dev/sdb", sysfs_root=root)
    assert ident.manufacturer == "NETAPP"
    assert ident.manufacturer_source == "the SCSI INQUIRY vendor identification"


def test_usb_disk_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = helpers.fake_scsi_sysfs(
        tmp_path / "sys", "sdc", "8:32", vendor="Generic", model="Flash Disk", rev="8.07",
        transport="usb",
    )  # fmt: skip
    FakeTools(tmp_path, monkeypatch, tools=())
    ident = identify("/dev/sdc", sysfs_root=root)
    assert link_text(ident.host_link) == (
        "host bus adapter driver xhci_hcd at PCI 0000:00:14.0, over USB"
    )
    assert ident.manufacturer == "Generic"  # what its INQUIRY data says


# --------------------------------------------------------------------------- this machine


def test_real_sysfs_virtio_disk() -> None:
    """The real /sys of this machine: a virtio disk has a driver but no PCIe link."""
    sysfs = Sysfs()
    names = [n for n in sysfs.all_block() if n.startswith("vd") and not sysfs.is_partition(n)]
    if not names:
        pytest.skip("no virtio disk on this machine")
    link = host_link(sysfs, names[0], "virtio")
    assert link is not None and link["kind"] == "virtio"
    driver = os.path.basename(os.readlink(f"/sys/class/block/{names[0]}/device/driver"))
    assert link["driver"] == driver
    assert link_text(link).startswith(f"virtio, driver {driver}")


@pytest.mark.root
def test_real_loop_device_has_none(loops: LoopDevices) -> None:
    ident = identify(loops.create(16))
    assert ident.manufacturer == "unknown" and ident.manufacturer_source is None
    assert ident.host_link is None and ident.form_factor is None
    assert link_text(ident.host_link) == "not applicable"


# --------------------------------------------------------------------------- the report's rows


EMU = {"interface": "nbd", "emulated": True}
SATA = {"interface": "sata", "manufacturer": "Samsung", "manufacturer_source": "the model name"}
NOT_RECORDED = "not recorded (the run was made before tkbench recorded it)"


@pytest.mark.parametrize(
    ("kind", "identity", "value"),
    [
        ("file", {"interface": "file"}, "not applicable (a regular file)"),
        ("volume", {"interface": "volume"}, "not applicable (a filesystem volume)"),
        ("nbd", {"interface": "nbd"}, "not applicable (an NBD export)"),
        ("nbd", EMU, "not applicable (the bundled SSD emulator)"),
        ("block", {"interface": "loop"}, "not applicable (a loop device)"),
        ("block", {"interface": "nvme"}, NOT_RECORDED),
        ("block", SATA, "Samsung (from the model name)"),
    ],
)
def test_report_rows_for_every_kind_of_target(kind: str, identity: dict, value: str) -> None:
    m = Manifest(target=TargetRecord(kind=kind, identity=identity))
    assert devicefacts.manufacturer_row(m).value == value
    link = devicefacts.link_rows(m)[0].value
    assert link == (value if "manufacturer" not in identity else NOT_RECORDED)
