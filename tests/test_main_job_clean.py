"""The README's main job writes nothing into the checkout it is run from (issue 28).

The command is read from the README's first code block (so the test follows the README) and run
from the root of a copy of the repository's tracked files, with the run's data directory pointed
at a temporary one; every file under the copy (ignored ones included: ``fuzzptx-out/``,
``.hypothesis/``) is listed before and after.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from fuzzptx.engine.run import default_out, runs_dir

ROOT = Path(__file__).resolve().parent.parent


def _main_job() -> list[str]:
    """The README's ``fuzzptx run ...`` command, as arguments after ``fuzzptx``."""
    block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    cmd = next(part.strip() for line in block.splitlines() for part in line.split("&&")
               if part.strip().startswith("fuzzptx run"))
    return cmd.split()[1:]


def _copy_checkout(dest: Path) -> None:
    """The tracked files, and the two package links ``fuzzptx/strategies`` and ``fuzzptx/oracles``."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = ROOT / rel
        if not src.is_file():
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)
    for link in ("strategies", "oracles"):
        if not (dest / "fuzzptx" / link).exists():
            os.symlink(f"../{link}", dest / "fuzzptx" / link)


def _listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_readme_main_job_writes_nothing_into_the_checkout(tmp_path):
    args = _main_job()
    assert args[:1] == ["run"] and "--out" not in args  # the default output is what is tested
    checkout, data = tmp_path / "checkout", tmp_path / "data"
    checkout.mkdir()
    _copy_checkout(checkout)
    before = _listing(checkout)
    env = {k: v for k, v in os.environ.items() if k not in ("FUZZPTX_OUT", "PYTHONPATH")}
    env.update(PYTHONPATH=str(checkout), XDG_DATA_HOME=str(data), PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-m", "fuzzptx.cli", *args, "--quiet"], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert _listing(checkout) == before, sorted(_listing(checkout) - before)[:20]
    # the run went to the per-user data directory, and the summary says where
    runs = list((data / "fuzzptx" / "runs").iterdir())
    assert len(runs) == 1 and (runs[0] / "results.jsonl").is_file() and (runs[0] / "summary.json").is_file()
    assert str(runs[0]) in proc.stdout


def test_default_out_is_per_user_not_the_current_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("FUZZPTX_OUT", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert runs_dir() == tmp_path / ".local" / "share" / "fuzzptx" / "runs"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_out(3).parent == tmp_path / "xdg" / "fuzzptx" / "runs"
    monkeypatch.setenv("FUZZPTX_OUT", str(tmp_path / "mine"))
    assert default_out(3).parent == tmp_path / "mine" and default_out(3).name.startswith("run-seed3-")
