"""Shared test configuration. Tests talk only to servers they start on 127.0.0.0/8."""
