"""Fixtures shared by the provider tests."""

from __future__ import annotations

import sys
import uuid

import pytest

from mnemo.providers import ProviderRegistry
from support.plugins import install_distribution


@pytest.fixture
def session():
    """Build an initialized registry from providers; after the test, release any provider still held
    in a hook (``release`` event) and shut every registry down."""
    made = []

    def start(*providers, **deadlines):
        registry = ProviderRegistry(**deadlines)
        for provider in providers:
            registry.register(provider)
        registry.initialize_all("session", {})
        made.append((registry, providers))
        return registry

    yield start
    for registry, providers in made:
        for provider in providers:
            release = getattr(provider, "release", None)
            if release is not None:
                release.set()
        registry.shutdown_all()

PLUGIN_SOURCE = '''
from mnemo import BaseProvider, ConfigField

class AcmeProvider(BaseProvider):
    name = "acme"

    def config_schema(self):
        return [ConfigField("url", required=True), ConfigField("api_key", secret=True, required=True)]

    def initialize(self, session_key, config):
        self.config = config

    def enrich_turn(self, user_message, messages):
        return "acme knows: " + self.config["url"]

class Exploding(BaseProvider):
    name = "exploding"

    def __init__(self):
        raise RuntimeError("no licence")

class Misnamed(BaseProvider):
    name = "somebody-else"

NOT_A_PROVIDER = 42
'''


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """Install a distribution with one good plug-in and every kind of broken one; return its module name."""
    module = f"acme_plugins_{uuid.uuid4().hex[:8]}"
    broken = f"broken_{uuid.uuid4().hex[:8]}"
    site = install_distribution(
        tmp_path / "site",
        "acme-memory",
        "1.4",
        {module: PLUGIN_SOURCE, broken: "import a_module_that_is_not_installed\n"},
        {
            "acme": f"{module}:AcmeProvider",
            "exploding": f"{module}:Exploding",
            "misnamed": f"{module}:Misnamed",
            "not-a-provider": f"{module}:NOT_A_PROVIDER",
            "broken-import": f"{broken}:Provider",
        },
    )
    monkeypatch.syspath_prepend(str(site))
    yield module
    sys.modules.pop(module, None)


