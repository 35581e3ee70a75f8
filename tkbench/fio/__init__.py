"""fio: see docs/architecture.md."""
