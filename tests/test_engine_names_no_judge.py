"""The engine never names a judge: it reads each judge's declared stage and needs (``Judge.stage``,
``Judge.needs``), so a judge added as a plugin runs where a built-in one would.  Every string in
``fuzzptx/engine/`` (docstrings aside) is searched for a built-in judge's name used as a name:
the whole string, or a name followed by ``@``, ``:``, ``!=`` or ``|`` (``"ptxas@12.9"``,
``"hardware:fault"``)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from fuzzptx.judges.builtin import BUILTIN

ENGINE = Path(__file__).resolve().parent.parent / "fuzzptx" / "engine"


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def judge_names_in(source: str, names=BUILTIN) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    skip = _docstrings(tree)
    pattern = re.compile(r"^(%s)(?:$|[@:|]|!=)" % "|".join(map(re.escape, names)))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            if pattern.match(node.value.strip()):
                found.append((node.lineno, node.value))
    return found


def test_no_judge_name_in_the_engine():
    hits = [f"{p.relative_to(ENGINE.parent.parent)}:{line}: {text!r}"
            for p in sorted(ENGINE.glob("*.py")) for line, text in judge_names_in(p.read_text())]
    assert not hits, "\n".join(hits)


def test_the_search_finds_a_name():
    """The search itself can fail: the engine's old tests (``"hardware" in judges``, a release's
    ``"ptxas@"`` prefix, a ``"sass:"`` signature) are found, a docstring or a word in a message is not."""
    src = '''"""hardware docstring"""
def f(judges, v):
    """ptxas"""
    if "hardware" in judges:
        return v["ptxas@12.9.86"], "sass:hazard|x", "reference!=hardware|mismatch"
    return "the ptxas releases"
'''
    assert sorted(t for _, t in judge_names_in(src)) == sorted(["hardware", "ptxas@12.9.86", "sass:hazard|x",
                                                                "reference!=hardware|mismatch"])
