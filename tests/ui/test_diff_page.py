"""The viewer's diff page: two stored runs compared as ``dsh diff`` compares them."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.ui.conftest import Loaded
from tests.ui.helpers import HOSTILE_ID, SCRIPT


def test_a_session_against_itself_behaves_the_same(client: TestClient, mixed_store: Loaded) -> None:
    page = client.get("/diff", params={"a": mixed_store.parent, "b": mixed_store.parent})
    assert page.status_code == 200
    assert 'id="verdict"' in page.text and "same behaviour" in page.text
    assert page.text.count('<section class="card"><h2>session root') == 3  # the root and two children
    assert "session root/child 2" in page.text  # both children paired and tabled
    assert "PARENT_DONE" in page.text


def test_two_different_sessions_show_the_first_divergence_escaped(
    client: TestClient, mixed_store: Loaded
) -> None:
    page = client.get("/diff", params={"a": mixed_store.parent, "b": HOSTILE_ID})
    assert page.status_code == 200
    assert "different" in page.text and 'id="unified"' in page.text
    assert "first-divergence-line" in page.text
    assert SCRIPT not in page.text  # the hostile log's <script> arrives escaped


def test_an_unknown_session_is_a_404_naming_it(client: TestClient, mixed_store: Loaded) -> None:
    page = client.get("/diff", params={"a": mixed_store.parent, "b": "no-such-session"})
    assert page.status_code == 404
    assert "no-such-session" in page.text and 'id="diff-error"' in page.text


def test_the_empty_form(client: TestClient) -> None:
    page = client.get("/diff")
    assert page.status_code == 200 and 'action="/diff"' in page.text and 'id="verdict"' not in page.text
