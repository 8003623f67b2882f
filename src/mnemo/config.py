"""Where mnemo keeps its files and how it is configured.

Settings come from four places; a later one wins:

1. the defaults below,
2. ``MNEMO_HOME/config.toml`` (a top-level key is a setting's name; a table prefixes its keys, so
   ``[llm] model = "x"`` sets ``llm_model``; ``[providers.NAME]`` tables are handed to provider
   ``NAME``'s ``initialize`` as its config),
3. environment variables ``MNEMO_<SETTING>`` (``MNEMO_LLM_MODEL``, ``MNEMO_USER_ID``),
4. keyword arguments.

Unknown names and ill-typed values raise :class:`~mnemo.errors.ConfigError` naming the setting.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .database import database_path
from .errors import ConfigError, InvalidArgument
from .safety.scan import DEFAULT_SCAN_THRESHOLD
from .scope import Scope, check_id, path_segment

CONFIG_FILENAME = "config.toml"
ENV_PREFIX = "MNEMO_"


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The home directory: ``home`` if given, else ``$MNEMO_HOME``, else ``~/.mnemo``."""
    if home is None:
        home = os.environ.get("MNEMO_HOME") or Path.home() / ".mnemo"
    return Path(home).expanduser()


MIN_SERVE_TOKEN_LENGTH = 16


class ServeToken(BaseModel):
    """One ``[[serve.tokens]]`` table: the bearer ``token`` that opens ``user_id``'s memory over HTTP."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: SecretStr = Field(min_length=MIN_SERVE_TOKEN_LENGTH)
    user_id: str

    @field_validator("user_id")
    @classmethod
    def _user(cls, value: str) -> str:
        try:
            return check_id(value, "user_id")
        except InvalidArgument as exc:
            raise ValueError(exc.problem) from None


class Settings(BaseModel):
    """Every tunable of mnemo, flat, with its default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # where mnemo keeps its files: the home given (--home), else $MNEMO_HOME, else ~/.mnemo (see resolve_home)
    home: Path

    # whose memory: every read and write of the archive and the graph is confined to this exact
    # (user, agent, channel) triple; "" is the default scope, not a wildcard (see mnemo.scope)
    user_id: str = ""
    agent_id: str = ""
    channel_id: str = ""
    # curated memory: one MEMORY.md / USER.md pair shared by every user of the home (default), or one
    # pair per user under HOME/users/<escaped user id>/memories/
    curated_per_user: bool = False

    # curated memory: as files in the home (default), or as rows of the database_url's PostgreSQL database,
    # so hosts sharing one memory share one curated pair too (see mnemo.backends.postgres.curated)
    curated_backend: Literal["files", "postgres"] = "files"

    # curated memory: the hard caps of MEMORY.md and USER.md, in characters
    memory_char_limit: int = Field(2200, gt=0)
    user_char_limit: int = Field(1375, gt=0)

    # provider deadlines, in seconds
    enrich_timeout: float = Field(5.0, gt=0)
    compress_timeout: float = Field(120.0, gt=0)
    shutdown_timeout: float = Field(15.0, gt=0)

    # session archive and memory graph: in HOME/mnemo.db (unset), or in the PostgreSQL database this
    # postgresql:// URL names (several hosts sharing one memory; see mnemo.backends.postgres)
    database_url: str | None = None

    # the built-in providers (session archive, memory graph), and the per-turn recall budget in characters
    # (the graph's memories and earlier sessions' passages together)
    archive_enabled: bool = True
    graph_enabled: bool = True
    graph_context_chars: int = Field(1500, ge=0)
    # deep recall (pip install 'mnemo-local[deep]'): a local cross-encoder reorders recall's best 10 when the
    # whole call fits in recall_deep_ms (past it, the first ranking stands); recall_deep turns it on for
    # per-turn context too (recall(deep=True) and the recall tool's deep flag ask for it per call)
    recall_deep: bool = False
    recall_deep_ms: int = Field(300, ge=1)

    # graph maintenance (decay, pruning, links, merges) at session start when due (0: never), and the
    # bulletin frozen into the system prompt (0 characters: none)
    maintenance_interval_hours: float = Field(24.0, ge=0)
    prune_below: float = Field(0.1, ge=0, le=1)
    prune_after_days: float = Field(30.0, ge=0)
    bulletin_chars: int = Field(1500, ge=0)
    # let the configured model condense the bulletin, during maintenance passes only
    bulletin_llm: bool = False
    # "minilm": local all-MiniLM-L6-v2 vectors beside full text; "none": full text (and edges) only.
    # Archived messages are embedded after each turn on the archive's worker, never on the caller's thread.
    graph_embedder: Literal["minilm", "none"] = "minilm"
    archive_embedder: Literal["minilm", "none"] = "minilm"
    # Files derived from installed packages rather than from memories (the local model's float32 weights):
    # HOME/cache when unset. Deleting the directory is always safe.
    cache_dir: Path | None = None
    # Start even when mnemo's database cannot be opened, without the archive and graph (see mnemo.degraded).
    allow_degraded: bool = False
    # How the graph turns messages discarded by compression into memories: "rules" (deterministic, no
    # LLM) or "llm" (the configured model, falling back to the rules on any failure).
    graph_extractor: Literal["rules", "llm"] = "rules"

    # optional LLM (OpenAI-compatible chat completions); never called unless configured and asked for
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_timeout: float = Field(60.0, gt=0)

    # threat scan: the learned classifier flags text whose injection probability reaches this (1.0: off)
    scan_threshold: float = Field(DEFAULT_SCAN_THRESHOLD, gt=0, le=1)

    # provenance (see mnemo.provenance, mnemo.taint): tools whose results do not taint the session (the
    # host's own tools it vouches for), and how many days a write held for review waits before it expires
    trusted_tools: tuple[str, ...] = ()
    review_expire_days: float = Field(30.0, gt=0)
    # hold untrusted writes for review (off: they are applied, still stamped with their origin, and only
    # the threat scan stands between them and later prompts)
    quarantine: bool = True

    # mnemo serve over HTTP: serve_token (MNEMO_SERVE_TOKEN) opens the user_id setting's memory;
    # [[serve.tokens]] tables (token, user_id) let one server serve several people, each in their scope
    serve_token: SecretStr | None = Field(None, min_length=MIN_SERVE_TOKEN_LENGTH)
    serve_tokens: tuple[ServeToken, ...] = ()

    # per-provider configuration, keyed by provider name
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @field_validator("user_id", "agent_id", "channel_id")
    @classmethod
    def _scope_id(cls, value: str, info: ValidationInfo) -> str:
        try:
            return check_id(value, str(info.field_name))
        except InvalidArgument as exc:
            raise ValueError(exc.problem) from None

    @model_validator(mode="after")
    def _per_user_directory(self) -> Settings:
        # Refused here, with the setting's name, rather than on first use of memories_dir.
        if self.curated_per_user and self.user_id:
            try:
                path_segment(self.user_id)
            except InvalidArgument as exc:
                raise ValueError(f"user_id {exc.problem}") from None
        if self.curated_backend == "postgres" and not self.database_url:
            raise ValueError("curated_backend = 'postgres' needs database_url (the postgresql:// database to keep it in)")
        return self

    @property
    def curated_scope(self) -> Scope:
        """Whose curated pair this is: the user's with ``curated_per_user``, else the home's one pair
        (as :attr:`memories_dir` lays out the files)."""
        return Scope(self.user_id if self.curated_per_user else "")

    @property
    def scope(self) -> Scope:
        """The (user, agent, channel) scope of this configuration."""
        return Scope(self.user_id, self.agent_id, self.channel_id)

    @property
    def memories_dir(self) -> Path:
        """Directory holding ``MEMORY.md`` and ``USER.md``: ``HOME/memories``, or with
        ``curated_per_user`` and a user id, ``HOME/users/<escaped user id>/memories``."""
        if self.curated_per_user and self.user_id:
            return self.home / "users" / path_segment(self.user_id) / "memories"
        return self.home / "memories"

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a postgresql:// URL (leave it unset for the SQLite database in the home)")
        return value or None

    @property
    def cache_directory(self) -> Path:
        """Where derived model files go: ``cache_dir`` when set, else ``HOME/cache``, so a home holds
        everything mnemo writes for it."""
        return self.cache_dir if self.cache_dir is not None else self.home / "cache"

    @property
    def database_target(self) -> str | Path:
        """Where the archive and graph live: the ``database_url`` when set, else :attr:`database_path`."""
        return self.database_url if self.database_url else self.database_path

    @property
    def database_path(self) -> Path:
        """mnemo's own SQLite database (session archive and memory graph): ``HOME/mnemo.db``, or the
        ``state.db`` a mnemo 0.1 home already keeps them in (see :mod:`mnemo.database`)."""
        return database_path(self.home)


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{name}_"))
        else:
            flat[name] = value
    return flat


def _from_file(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path} is not valid UTF-8 TOML: {exc}") from exc
    providers = document.pop("providers", None)
    flat = _flatten(document)
    if providers is not None:
        flat["providers"] = providers
    return flat


def _from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    names = set(Settings.model_fields) - {"home", "providers"}
    found: dict[str, Any] = {}
    for key, value in environ.items():
        if key.startswith(ENV_PREFIX):
            name = key[len(ENV_PREFIX) :].lower()
            if name in names:
                found[name] = value
    return found


def load_settings(
    home: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    **overrides: Any,
) -> Settings:
    """Build :class:`Settings` from defaults, ``config.toml``, the environment and ``overrides``."""
    environ = os.environ if environ is None else environ
    resolved = resolve_home(home if home is not None else environ.get("MNEMO_HOME"))
    merged: dict[str, Any] = {}
    merged.update(_from_file(resolved / CONFIG_FILENAME))
    merged.update(_from_env(environ))
    merged.update({k: v for k, v in overrides.items() if v is not None})
    merged["home"] = resolved
    try:
        return Settings(**merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "settings"
        raise ConfigError(f"setting {field!r}: {first['msg']}") from exc
