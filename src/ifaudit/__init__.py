"""ifaudit: audit-grade, byte-reproducible replication of instruction-following scores."""

__version__ = "0.1.0"
