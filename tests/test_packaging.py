"""What ``pip install .`` installs: every folder of Python code under the three source roots is a
package of the distribution, under the name ``package-dir`` gives it.  A hand-kept package list
once left out ``fuzzptx.reduce``, ``fuzzptx.reduce.passes`` and ``fuzzptx.oracles.sass``, and a
non-editable install then died on its first import (issue 35).  ``.ci/run`` builds the wheel and
runs the README's main job from it; this test reads the same setuptools configuration in-process."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def dist():
    from distutils.core import run_setup  # setuptools' own copy (setuptools is a build requirement)

    here = os.getcwd()
    os.chdir(ROOT)
    try:
        if (ROOT / "setup.py").exists():
            return run_setup("setup.py", stop_after="config")  # pyproject.toml applied, nothing built
        from setuptools.dist import Distribution

        d = Distribution()
        d.parse_config_files()  # pyproject.toml alone
        return d
    finally:
        os.chdir(here)


def _code_folders() -> dict[str, Path]:
    """Every folder holding a ``.py`` file under the roots, by the dotted name it installs as."""
    roots = {"fuzzptx": ROOT / "fuzzptx", "fuzzptx.strategies": ROOT / "strategies", "fuzzptx.oracles": ROOT / "oracles"}
    out = {}
    for name, root in roots.items():
        for py in root.rglob("*.py"):
            rel = py.parent.relative_to(root)
            if "__pycache__" in rel.parts:
                continue
            out[".".join((name, *rel.parts))] = py.parent
    return out


def test_every_code_folder_is_a_package_of_the_distribution(dist):
    folders = _code_folders()
    assert {"fuzzptx.reduce", "fuzzptx.reduce.passes", "fuzzptx.oracles.sass"} <= set(folders)
    missing = sorted(set(folders) - set(dist.packages))
    assert not missing, f"not installed by `pip install .`: {missing}"
    for folder in folders.values():
        assert (folder / "__init__.py").is_file(), f"{folder} holds Python code but no __init__.py"


def test_each_package_maps_to_its_folder(dist):
    folders = _code_folders()
    for name in dist.packages:
        # setuptools' rule: the longest package-dir prefix, then the rest of the name as folders
        prefix = max((p for p in dist.package_dir if name == p or name.startswith(p + ".")), key=len)
        folder = ROOT / dist.package_dir[prefix] / Path(*name[len(prefix):].lstrip(".").split(".") if name != prefix else ())
        assert folder == folders.get(name), f"{name} -> {folder}"
