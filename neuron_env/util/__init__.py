"""Small shared utilities: the one subprocess funnel, redaction, package names."""
