"""What usage costs: the price table (``genai-prices``), a user's override file, and :class:`Cost`.

A price is looked up by the model and provider as recorded, at the time the call was made
(prices change by date and time of day: a call is never priced at the time it is shown).
The user's override file wins:
``$DSH_PRICES``, else ``prices.json`` in the dsh directory (``$DSH_HOME``, else ``~/.dsh``)::

    {"models": [{"model": "my-model", "provider": "local",
                 "input": 0.5, "output": 1.5, "cacheRead": 0.05, "cacheWrite": 0.6}]}

(US dollars per million tokens; ``provider`` optional: it then matches any provider; an
absent cache price is the input price). Then ``genai-prices``' bundled table (no network):
the recorded provider when it knows it, else its best match for the model. A model found
in neither is *unknown*: a :class:`Cost` then names it and has no total — never 0.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import cache
from pathlib import Path

from dsh import jsonx
from dsh.errors import PriceFileError
from dsh.home import dsh_home
from dsh.session.bill import Bill, minute_of
from dsh.session.usage import Ledger, Route, Tokens

MILLION = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class Cost:
    """US dollars of the priced usage, and the models (``model@provider``) nobody priced."""

    priced: Decimal = Decimal(0)
    unknown: tuple[str, ...] = ()

    @property
    def usd(self) -> Decimal | None:
        """The total, ``None`` when some usage has no price."""
        return None if self.unknown else self.priced

    def __add__(self, other: Cost) -> Cost:
        if not (self.unknown or other.unknown):
            return Cost(self.priced + other.priced)
        unknown = self.unknown + tuple(u for u in other.unknown if u not in self.unknown)
        return Cost(self.priced + other.priced, unknown)

    def to_wire(self) -> dict[str, object]:
        """``{"usd": float | null, "pricedUsd": float, "unknown": [model@provider, ...]}``."""
        usd = self.usd
        return {
            "usd": None if usd is None else round(float(usd), 8),
            "pricedUsd": round(float(self.priced), 8),
            "unknown": list(self.unknown),
        }

    def text(self) -> str:
        """``$0.0123``, ``unknown (model)``, or ``$0.01 + unknown (model)``."""
        if not self.unknown:
            return _dollars(self.priced)
        names = ", ".join(self.unknown)
        return f"{_dollars(self.priced)} + unknown ({names})" if self.priced else f"unknown ({names})"

    def short(self) -> str:
        """For a table cell: ``$0.0123``, ``unknown``, or ``$0.0123+?`` (some usage unpriced)."""
        if not self.unknown:
            return _dollars(self.priced)
        return f"{_dollars(self.priced)}+?" if self.priced else "unknown"


def _dollars(value: Decimal) -> str:
    if value == 0:
        return "$0"
    if value < Decimal("0.01"):
        return f"${value:.6f}"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


@dataclass(frozen=True, slots=True)
class Override:
    """One entry of the override file: US dollars per million tokens."""

    model: str
    provider: str | None
    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal

    def price(self, tokens: Tokens) -> Decimal:
        return (
            tokens.input * self.input
            + tokens.output * self.output
            + tokens.cache_read * self.cache_read
            + tokens.cache_write * self.cache_write
        ) / MILLION


def prices_path(env: Mapping[str, str] | None = None) -> Path:
    """``$DSH_PRICES`` if set, else ``prices.json`` in the dsh directory."""
    env = os.environ if env is None else env
    given = env.get("DSH_PRICES", "").strip()
    return Path(given).expanduser() if given else dsh_home(env) / "prices.json"


def _decimal(entry: Mapping[str, object], key: str, path: Path, default: Decimal | None = None) -> Decimal:
    value = entry.get(key)
    if value is None and default is not None:
        return default
    if type(value) not in (int, float) or value < 0:  # type: ignore[operator]
        raise PriceFileError(
            f"{path}: {key!r} of model {entry.get('model')!r} must be a number ≥ 0 (US$ per million tokens)"
        )
    return Decimal(str(value))


def load_overrides(path: Path) -> tuple[Override, ...]:
    """The override file's entries (none when it does not exist); a bad file is a one-line error."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return ()
    except OSError as exc:
        raise PriceFileError(f"{path}: cannot read the price file: {exc.strerror}") from exc
    try:
        document = jsonx.loads(raw)
    except ValueError as exc:
        raise PriceFileError(f"{path}: not valid JSON: {exc}") from exc
    models = document.get("models") if isinstance(document, dict) else None
    if not isinstance(models, list):
        raise PriceFileError(f'{path}: expected {{"models": [...]}}')
    out = []
    for entry in models:
        if not isinstance(entry, dict) or not isinstance(entry.get("model"), str):
            raise PriceFileError(f"{path}: each entry of models needs a string 'model'")
        provider = entry.get("provider")
        given = _decimal(entry, "input", path)
        out.append(
            Override(
                entry["model"],
                provider if isinstance(provider, str) else None,
                given,
                _decimal(entry, "output", path),
                _decimal(entry, "cacheRead", path, given),
                _decimal(entry, "cacheWrite", path, given),
            )
        )
    return tuple(out)


@cache
def _table_price(model: str, provider: str | None, tokens: Tokens, minute: int) -> Decimal | None:
    from datetime import UTC, datetime

    import genai_prices  # the bundled table: loaded only when something is priced

    usage = genai_prices.Usage(
        input_tokens=tokens.prompt,
        output_tokens=tokens.output,
        cache_read_tokens=tokens.cache_read,
        cache_write_tokens=tokens.cache_write,
    )
    when = datetime.fromtimestamp(minute / 1000, tz=UTC)
    for known in (provider, None) if provider is not None else (None,):
        try:
            return genai_prices.calc_price(
                usage, model, provider_id=known, genai_request_timestamp=when
            ).total_price
        except LookupError:
            if known is not None and _knows_provider(known):
                return None  # the provider is known and does not list the model
    return None


@cache
def _knows_provider(provider: str) -> bool:
    import genai_prices

    try:
        genai_prices.calc_price(genai_prices.Usage(), "", provider_id=provider)
    except LookupError as exc:
        return "Unable to find provider" not in str(exc)
    return True


@cache
def _bundled_key() -> str:
    """The bundled table's identity, read without importing it (importing costs 0.1–0.2 s):
    the size and modification time of its data module (another ``genai-prices`` → another key)."""
    spec = importlib.util.find_spec("genai_prices")
    if spec is None or spec.origin is None:
        return "none"
    try:
        data = (Path(spec.origin).parent / "data.py").stat()
    except OSError:
        return "none"
    return f"{data.st_size}.{data.st_mtime_ns}"


class PriceTable:
    """Prices usage by route: the override file first, then the bundled table."""

    def __init__(self, overrides: tuple[Override, ...] = ()) -> None:
        self.overrides = overrides
        self._key: str | None = None

    @property
    def key(self) -> str:
        """This table's identity (the override entries and the bundled table): a cost kept
        under another key is priced again."""
        if self._key is None:
            entries = repr(self.overrides).encode()
            self._key = f"{hashlib.sha256(entries).hexdigest()[:16]}.{_bundled_key()}"
        return self._key

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None) -> PriceTable:
        """The table with the user's override file (:func:`prices_path`)."""
        return cls(load_overrides(prices_path(env)))

    def _override(self, model: str, provider: str | None) -> Override | None:
        for entry in self.overrides:
            if entry.model == model and entry.provider in (None, provider):
                return entry
        return None

    def price(self, route: Route, tokens: Tokens, at: int | None = None) -> Cost:
        """What ``tokens`` cost on ``route`` when used at ``at`` (epoch ms; ``None``: now).
        Nothing used costs nothing, whatever the model."""
        if tokens.empty:
            return Cost()
        model, provider = route
        label = f"{model or 'no model recorded'}@{provider}" if provider else (model or "no model recorded")
        if model is None:
            return Cost(unknown=(label,))
        entry = self._override(model, provider)
        if entry is not None:
            return Cost(entry.price(tokens))
        found = _table_price(model, provider, tokens, minute_of(at))
        return Cost(found) if found is not None else Cost(unknown=(label,))

    def cost(self, spent: Ledger | Bill) -> Cost:
        """The cost of every call of ``spent``, each at its own time: the calls of one route in
        one minute are priced together (``dsh.session.bill``)."""
        bill = spent if isinstance(spent, Bill) else Bill.of(spent)
        if bill.kept is not None and bill.kept[0] == self.key:
            return Cost(Decimal(bill.kept[1]), bill.kept[2])
        costs = [self.price(route, tokens, minute) for (route, minute), tokens in bill.slots.items()]
        return costs[0] if len(costs) == 1 else sum(costs, Cost())

    def keeping_cost(self, bill: Bill) -> Bill:
        """``bill`` with its cost kept under this table's key, when pricing it reads the bundled
        table (importing it costs 0.1–0.2 s a process); else ``bill`` itself: a listing keeps
        it in the session's digest, so the next one need not import the table."""
        if bill.kept is not None and bill.kept[0] == self.key:
            return bill
        if not any(self._from_table(route, tokens) for (route, _), tokens in bill.slots.items()):
            return bill
        cost = self.cost(bill)
        return replace(bill, kept=(self.key, str(cost.priced), cost.unknown))

    def _from_table(self, route: Route, tokens: Tokens) -> bool:
        model, provider = route
        return not tokens.empty and model is not None and self._override(model, provider) is None
