"""tkbench: SNIA PTS-style SSD qualification driven by fio."""

__version__ = "0.1.0"
