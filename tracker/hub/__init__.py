"""Layer 2: where revisions come from. Only the protocol lives here; implementations are
imported from their modules (``tracker.hub.localgit``, ``tracker.hub.hf``) explicitly."""

from tracker.hub.interface import CommitListing, HubSource

__all__ = ["CommitListing", "HubSource"]
