"""The service's routers: ``sessions`` (``/v1``, the library's operations) and ``ops``
(health, readiness, metrics)."""
