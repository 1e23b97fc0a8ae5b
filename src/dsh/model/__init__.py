"""Models: the ``Model`` Protocol, the OpenAI-compatible adapter and test doubles."""

from dsh.model.base import Delegation, Model, ModelRequest

__all__ = ["Delegation", "Model", "ModelRequest"]
