"""targets: see docs/architecture.md."""
