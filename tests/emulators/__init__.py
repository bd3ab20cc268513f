"""Emulated cloud APIs for the tests and the bench (tests/ is on sys.path through tests/conftest.py)."""
