"""Why an LLM call could not be made or did not succeed."""

from __future__ import annotations

from ..errors import MnemoError


class LLMNotConfigured(MnemoError):
    """No endpoint or model is configured, so no LLM call can be made (nothing was sent)."""


class LLMError(MnemoError):
    """An LLM call failed: the endpoint was unreachable, answered with an error, or answered nonsense.

    The message is one line naming the reason (``HTTP 401: Invalid API key``); ``status_code`` is the
    HTTP status when the server answered, else ``None``.
    """

    def __init__(self, reason: str, *, status_code: int | None = None) -> None:
        self.reason = reason
        self.status_code = status_code
        super().__init__(reason)
