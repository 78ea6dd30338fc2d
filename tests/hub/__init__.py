"""Tests of the HubSource implementations (tracker.hub) and the Hub emulator."""
