"""A stand-in for the ``opentelemetry-api`` package, which cannot be installed where the suite runs: the few names
of ``opentelemetry.trace`` the SDK calls, with spans kept in a list. ``test_tracing`` puts it on ``sys.path``."""
