"""Stage 7, emit: severity rules, OSV records, feeds and webhooks (layer 2 adapters).

Modules are imported by their full name (``advisories.rules``, ``advisories.osv``, ...);
this package deliberately re-exports nothing, so importing one never drags in the others.
"""
