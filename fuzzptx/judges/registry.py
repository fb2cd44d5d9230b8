"""The judge registry: built-in judges and those other packages add through the entry-point group
``fuzzptx.judges`` (``[project.entry-points."fuzzptx.judges"] zerosim = "zerosim:ZeroSim"``).

Entry points are read once, the first time a name is not among the registered ones, so a run
that asks only for built-in judges never imports another package.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from fuzzptx.errors import FuzzptxError

# The registry holds ``fuzzptx.judges.base.Judge`` objects; it does not import that module (base
# reads the registry for ``Verdicts.summary``), so its annotations say ``Judge`` in words only.
Judge = Any

ENTRY_POINT_GROUP = "fuzzptx.judges"

_REGISTRY: dict[str, Judge] = {}
_ORDER: list[str] = []  # registration order: built-ins first, in the order their lines print
_LOADED_ENTRY_POINTS = False
_FAMILIES: dict[str, object] = {}  # name prefix -> factory(rest of the name) -> Judge


class UnknownJudge(FuzzptxError):
    """A judge name that no built-in and no installed plugin provides (one line at the CLI)."""


def register(judge: Judge) -> Judge:
    """Add a judge (an instance, or a class taking no arguments); usable as a class decorator.
    Registering a name again replaces the judge of that name."""
    instance = judge() if isinstance(judge, type) else judge
    if not getattr(instance, "name", None):
        raise TypeError(f"{type(instance).__name__}: a judge needs a name")
    if instance.name not in _REGISTRY:
        _ORDER.append(instance.name)
    _REGISTRY[instance.name] = instance
    return judge  # type: ignore[return-value]


def unregister(name: str) -> None:
    """Remove a judge registered in this process (a test's, or a plugin's that must not run)."""
    _REGISTRY.pop(name, None)
    if name in _ORDER:
        _ORDER.remove(name)


def register_family(prefix: str, factory) -> None:
    """Judges named ``<prefix><something>`` made on first use by ``factory(something)`` (a ptxas
    release: ``ptxas@12.9.86``); the factory raises ``UnknownJudge`` for a name it cannot make."""
    _FAMILIES[prefix] = factory


def _load_entry_points() -> None:
    global _LOADED_ENTRY_POINTS
    if _LOADED_ENTRY_POINTS:
        return
    _LOADED_ENTRY_POINTS = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _REGISTRY:
            continue
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is named, never a traceback
            raise UnknownJudge(f"judge plugin {ep.name!r} ({ep.value}) failed to load: "
                               f"{type(exc).__name__}: {exc}") from None
        register(obj)


def get(name: str) -> Judge:
    """The judge called ``name`` (a plugin's entry point is loaded on first use)."""
    if name not in _REGISTRY:
        for prefix, factory in _FAMILIES.items():
            if name.startswith(prefix) and len(name) > len(prefix):
                register(factory(name[len(prefix):]))  # type: ignore[operator]
                break
    if name not in _REGISTRY:
        _load_entry_points()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownJudge(f"unknown judge {name!r} (have {', '.join(names())})") from None


def registered(name: str) -> Judge | None:
    """The judge registered under ``name`` in this process, if any (no family or plugin is made)."""
    return _REGISTRY.get(name)


def by_stage(stage: str) -> Judge | None:
    """The first registered judge of an engine stage (the compile stage's, where a run needs cubins
    and asked for no compiler)."""
    return next((_REGISTRY[n] for n in _ORDER if getattr(_REGISTRY[n], "stage", None) == stage), None)


def names() -> tuple[str, ...]:
    """Every judge name known here: the built-ins, then installed plugins."""
    _load_entry_points()
    return tuple(_ORDER)


def parse(text: str | Iterable[str], option: str = "--judges") -> tuple[str, ...]:
    """Judge names from a comma-separated list, each checked (``UnknownJudge`` names the bad one)."""
    items = [j.strip() for j in (text.split(",") if isinstance(text, str) else text) if j.strip()]
    if not items:
        raise UnknownJudge(f"{option}: no judge given (have {', '.join(names())})")
    bad = []
    for j in items:
        try:
            get(j)
        except UnknownJudge:
            bad.append(j)
    if bad:
        raise UnknownJudge(f"{option}: unknown judge(s) {', '.join(bad)} (have {', '.join(names())})")
    return tuple(dict.fromkeys(items))


def resolve(names_: Sequence[str]) -> list[Judge]:
    """The judges for ``names_`` in the order they must run: each after the judges it reads
    (``Judge.after``) when those are asked for too, otherwise in registration order."""
    wanted = [get(n) for n in names_]
    asked = {j.name for j in wanted}
    order = {n: k for k, n in enumerate(_ORDER)}
    out: list[Judge] = []
    placed: set[str] = set()

    def place(j: Judge, trail: tuple[str, ...] = ()) -> None:
        if j.name in placed:
            return
        if j.name in trail:
            raise UnknownJudge(f"judges {' -> '.join(trail + (j.name,))} read each other in a cycle")
        for dep in j.after:
            if dep in asked:
                place(get(dep), trail + (j.name,))
        placed.add(j.name)
        out.append(j)

    for j in sorted(wanted, key=lambda j: order[j.name]):
        place(j)
    return out


def summary_order(verdicts: Iterable[str]) -> list[Judge]:
    """The judges of these verdicts in the order their lines print (registration order)."""
    present = set(verdicts)
    for name in present - set(_REGISTRY):
        get(name)
    return [_REGISTRY[n] for n in _ORDER if n in present]

