"""Every command's ``--help`` gives each option's meaning and its default (issue 29), and its usage
line names the program a user types (``fuzzptx NAME``)."""
from __future__ import annotations

import argparse

import pytest

from fuzzptx import cli


class _Got(Exception):
    pass


def _parser_of(name: str, monkeypatch) -> argparse.ArgumentParser:
    seen: list[argparse.ArgumentParser] = []

    def grab(self, *a, **k):
        seen.append(self)
        raise _Got

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", grab)
    with pytest.raises(_Got):
        cli._load(name)(["--help"])
    return seen[0]


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_every_option_says_what_it_means_and_its_default(name, monkeypatch):
    ap = _parser_of(name, monkeypatch)
    assert ap.prog == f"fuzzptx {name}"
    shows_defaults = isinstance(ap.formatter_class, type) and issubclass(ap.formatter_class,
                                                                          argparse.ArgumentDefaultsHelpFormatter)
    for act in ap._actions:
        if isinstance(act, argparse._HelpAction):
            continue
        what = "/".join(act.option_strings) or act.dest
        assert act.help and act.help.strip(), f"fuzzptx {name} {what}: no help text"
        if act.option_strings and act.default is not None and act.default is not False and act.default != argparse.SUPPRESS:
            assert shows_defaults or "default" in act.help, f"fuzzptx {name} {what}: default {act.default!r} not shown"


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_no_option_shows_its_default_twice_or_none(name, monkeypatch, capsys):
    """``run --out``'s help once ended "(default: ...) (default: None)" (issue 36)."""
    ap = _parser_of(name, monkeypatch)
    monkeypatch.undo()
    text = ap.format_help()
    flat = " ".join(text.split())
    assert "(default: None)" not in flat and "(default: False)" not in flat, name
    for block in flat.split(" --"):
        assert block.count("(default") <= 1, f"fuzzptx {name}: --{block[:200]}"
