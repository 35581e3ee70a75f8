"""Fake drive tools and helpers for the tkbench.device tests (see _fakelib.py)."""
