"""An agent's components hold it weakly, so a closed agent is freed by reference counts.

The components an :class:`~dsh.loop.agent.Agent` owns call back into it (the approvals and
the inbox append to its log, the steps and the waker run its turns). Held strongly, each of
those references made the agent a reference cycle: what it held — its session's events, its
store, a replay's whole recording — was freed only by a full run of the cyclic collector,
which a long read's paused, frozen heap (``dsh.store.bulk``) can put off for good.
Held through these, the agent and everything only it holds go when its last outside
reference does.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


def weak_method(method: Callable[P, R]) -> Callable[P, R]:
    """``method`` (a bound method) holding its object weakly; a call once the object is
    gone raises ``ReferenceError``."""
    ref = weakref.WeakMethod(cast(Any, method))
    name = method.__qualname__  # not the method itself: it holds its object

    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        bound = ref()
        if bound is None:
            raise ReferenceError(f"{name}: its object is gone")
        result: R = bound(*args, **kwargs)
        return result

    return call


def weak_self(obj: T) -> T:
    """A proxy of ``obj`` that does not keep it alive (``weakref.proxy``), typed as ``obj``."""
    return cast(T, weakref.proxy(obj))
