"""The package list, found rather than kept by hand: every folder with an ``__init__.py`` under
the three roots that ``pyproject.toml``'s ``package-dir`` maps (``strategies/`` and ``oracles/``
install as ``fuzzptx.strategies`` and ``fuzzptx.oracles``).  The rest of the metadata is in
``pyproject.toml``."""
import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

#: the known-bug ledger (``reports/known_bugs.toml``, kept where the reports are) travels in the
#: package, so an installed fuzzptx steers around and counts known bugs as a checkout does
#: (``fuzzptx.triage.known.DEFAULT_LEDGER``)
LEDGER = Path("reports") / "known_bugs.toml"
PACKAGED_LEDGER = Path("fuzzptx") / "triage" / "known_bugs.toml"

ROOTS = {"fuzzptx": "fuzzptx", "fuzzptx.strategies": "strategies", "fuzzptx.oracles": "oracles"}


def packages() -> list[str]:
    found = []
    for name, where in ROOTS.items():
        found += [name] + [f"{name}.{sub}" for sub in find_packages(where)]
    return sorted(set(found))


class BuildWithLedger(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:
            target = Path(self.build_lib) / PACKAGED_LEDGER
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(LEDGER, target)


setup(packages=packages(), cmdclass={"build_py": BuildWithLedger})
