"""outputs: see docs/architecture.md."""
