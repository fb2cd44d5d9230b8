"""The package list, found rather than kept by hand: every folder with an ``__init__.py`` under
the three roots that ``pyproject.toml``'s ``package-dir`` maps (``strategies/`` and ``oracles/``
install as ``fuzzptx.strategies`` and ``fuzzptx.oracles``).  The rest of the metadata is in
``pyproject.toml``."""
from setuptools import find_packages, setup

ROOTS = {"fuzzptx": "fuzzptx", "fuzzptx.strategies": "strategies", "fuzzptx.oracles": "oracles"}


def packages() -> list[str]:
    found = []
    for name, where in ROOTS.items():
        found += [name] + [f"{name}.{sub}" for sub in find_packages(where)]
    return sorted(set(found))


setup(packages=packages())
