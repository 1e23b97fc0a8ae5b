"""The headless Chromium fixtures the browser tests share: one browser per module, a fresh
1280x900 page per test that fails the test on any page error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.ui.browser import chromium_path

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (dev extra)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    with playwright_api.sync_playwright() as p:
        try:
            launched = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        except playwright_api.Error as exc:
            pytest.skip(f"{executable} does not start headless: {str(exc).splitlines()[0]}")
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield tab
    context.close()
    assert not errors, errors
