"""``dsh acp`` without a key: it serves anyway and says how to authenticate.

An editor starts the agent process itself; one that exits at once is a dead agent the user
cannot diagnose. So a live ``dsh acp`` with no key configured starts, advertises
:data:`AUTH_METHODS` (ACP ``env_var`` methods naming the variables) in ``initialize``, and
answers ``session/new``, ``session/load`` and ``session/prompt`` with ACP's
``auth_required`` error (-32000) until a key is known; ``authenticate`` re-reads the
environment. With a key at start (or under ``--replay``) ``initialize`` says
``authMethods: []`` exactly as the original, so recorded frames stay byte-identical.
"""

from __future__ import annotations

from pathlib import Path

from acp.exceptions import RequestError
from acp.schema import AuthEnvVar, EnvVarAuthMethod

from dsh.errors import MissingCredentialError
from dsh.loop import RetryPolicy
from dsh.model import Model
from dsh.model.settings import resolve_provider

AUTH_METHODS = [
    EnvVarAuthMethod(
        type="env_var",
        id="deepseek-api-key",
        name="DeepSeek API key",
        description="Set DEEPSEEK_API_KEY in the agent's environment, then restart the agent.",
        vars=[AuthEnvVar(name="DEEPSEEK_API_KEY", label="DeepSeek API key", secret=True)],
        link="https://platform.deepseek.com/api_keys",
    ),
    EnvVarAuthMethod(
        type="env_var",
        id="openai-compatible",
        name="Another OpenAI-compatible provider",
        description="Set DSH_API_KEY and DSH_BASE_URL (and DSH_MODEL) in the agent's environment.",
        vars=[
            AuthEnvVar(name="DSH_API_KEY", label="API key", secret=True),
            AuthEnvVar(name="DSH_BASE_URL", label="Base URL", secret=False),
            AuthEnvVar(name="DSH_MODEL", label="Model id", secret=False, optional=True),
        ],
    ),
]
"""What ``initialize`` advertises while no key is configured."""

METHOD_IDS = frozenset(method.id for method in AUTH_METHODS)


def auth_required() -> RequestError:
    """ACP's -32000, saying what to set (never a key: there is none)."""
    return RequestError.auth_required(
        {
            "message": "no API key: set DEEPSEEK_API_KEY (or DSH_API_KEY and DSH_BASE_URL) "
            "in the agent's environment",
            "authMethods": sorted(METHOD_IDS),
        }
    )


class PendingKeyModels:
    """A ``ModelSource`` with no key yet: refuses with ``auth_required`` until one is found."""

    def __init__(self, *, base_url: str | None, model: str | None) -> None:
        self._base_url = base_url
        self._model_name = model
        self._model: Model | None = None

    @property
    def authenticated(self) -> bool:
        return self._model is not None

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy()

    def authenticate(self) -> bool:
        """Re-read the environment; ``True`` once a key is there (the live model is built)."""
        if self._model is not None:
            return True
        try:
            settings = resolve_provider(base_url=self._base_url, model=self._model_name)
        except MissingCredentialError:
            return False
        self._model = settings.open_model()  # the key scrubbed out of /proc/<dsh>/environ
        return True

    def require(self) -> None:
        """Nothing when a key is known; else ``auth_required`` (the environment re-read first)."""
        if not self.authenticate():
            raise auth_required()

    async def model_for(self, cwd: Path) -> Model:
        self.require()
        assert self._model is not None
        return self._model

    async def aclose(self) -> None:
        if self._model is not None:
            await self._model.aclose()
