"""``ProviderSettings.open_model()``: the one place a live model is built from provider
settings, and the one place the key is scrubbed out of ``/proc/<dsh>/environ`` and
``cmdline`` (``dsh.procfs``) — so every composition root that opens a model scrubs it."""

from __future__ import annotations

import os
import subprocess
import sys

KEY = "sk-open-model-DO-NOT-LEAK-8c2f41d9"

CODE = """
import asyncio, os, sys
from dsh.model.settings import resolve_provider

def seen():
    key = os.environ["DSH_API_KEY"].encode()
    return sum(open(f"/proc/self/{name}", "rb").read().count(key) for name in ("environ", "cmdline"))

settings = resolve_provider(key_option=None)
before = seen()
model = settings.open_model()
after = seen()
print(before, after, type(model).__name__, model.model_name, os.environ["DSH_API_KEY"] == sys.argv[1])
print(model.secret_values() == (sys.argv[1],), sys.argv[1] not in repr(model))
asyncio.run(model.aclose())
"""


def test_open_model_builds_the_model_and_scrubs_the_key_from_the_process() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update({"DSH_API_KEY": KEY, "DSH_BASE_URL": "http://127.0.0.1:9/v1", "DSH_MODEL": "m-1"})
    done = subprocess.run(
        [sys.executable, "-c", CODE, KEY], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    first, second = done.stdout.splitlines()
    # the key was in the environment block and argv, and is in neither once the model is open;
    # Python's own copies (os.environ) and the model keep it
    assert first.split() == ["2", "0", "OpenAICompatModel", "m-1", "True"]
    assert second.split() == ["True", "True"]
