"""Models: the ``Model`` Protocol, the OpenAI-compatible adapter and test doubles."""

from dsh.model.base import Delegation, HoldsSecrets, Model, ModelRequest, NamedModel
from dsh.model.failures import MAX_RETRY_AFTER, retry_delay
from dsh.model.ordering import DeliveryOrder, SessionProgress
from dsh.model.session_ids import SessionIds

__all__ = [
    "MAX_RETRY_AFTER",
    "Delegation",
    "DeliveryOrder",
    "HoldsSecrets",
    "Model",
    "ModelRequest",
    "NamedModel",
    "SessionIds",
    "SessionProgress",
    "retry_delay",
]
