"""The ``--help`` layout every fuzzptx command shares: each option's meaning and its default."""
from __future__ import annotations

import argparse


class Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's defaults formatter, less the noise: no "(default: None)" or "(default: False)"
    (an unset option or a flag says nothing by its default), and no second default where the
    help text already states its own."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        unset = action.default is None or action.default is False or action.default == argparse.SUPPRESS
        if "default" in text or unset or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"
