"""rundir: see docs/architecture.md."""
