"""Helpers shared by the tests: servers to run, explorer runs shared across tests."""
