"""Contract suites: one protocol, every implementation."""
