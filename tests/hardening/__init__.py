"""Hardening tests (issue 9): secrets, bad input, isolation of the system under test, throughput."""
