"""Adapters that put mnemo inside a host agent. Each is imported only by its host (the plugin a host
loads), never by mnemo itself, so mnemo does not depend on any host."""
