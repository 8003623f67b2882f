"""Reusable test helpers: real local servers and fixtures shared by several test packages."""
