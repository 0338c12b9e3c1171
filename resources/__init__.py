"""Bundled resources: sample data, icons, report template."""
