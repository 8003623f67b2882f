"""Every test, each in the environment it needs: ``pip install nox && nox`` (the README's test command, and
what CI runs). ``nox -s tests -- tests/graph`` runs part of the main session.

Two test environments because the OpenAI Agents SDK needs ``openai>=3`` while Hermes Agent 0.19 pins
``openai==2.24.0``: the Agents SDK adapter is tested apart, everything else (Hermes included) together. A third
builds the documentation site, strictly, so a broken link or a missing reference fails the run.
"""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "openai-agents", "docs"]
nox.options.error_on_missing_interpreters = True


@nox.session
def tests(session: nox.Session) -> None:
    """The whole suite with the test extras, the real Hermes Agent, the Honcho SDK and Mem0 (they install side by
    side: ``mem0ai`` accepts Hermes' ``openai==2.24.0``)."""
    session.install("-e", ".[test,hermes,honcho,mem0]")
    session.run("pytest", "-q", *session.posargs)


@nox.session(name="openai-agents")
def openai_agents(session: nox.Session) -> None:
    """The OpenAI Agents SDK adapter and its documentation page's example, against the real SDK."""
    session.install("-e", ".[openai-agents]", "pytest>=8")
    session.run(
        "pytest", "-q", "tests/integrations/test_openai_agents.py", "tests/integrations/test_docs_examples.py",
        *session.posargs,
    )  # fmt: skip


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site (mkdocs.yml): strict, so a broken link, a missing anchor or an API name that
    no longer resolves fails; offline, nothing is fetched."""
    session.install("-e", ".[docs]")
    session.run("mkdocs", "build", "--strict", *session.posargs, env={"NO_MKDOCS_2_WARNING": "1"})
