"""Fuzz tests over ``fuzzptx.strategies.programs()`` through the plugin (``pytest -n auto``-able).

CI (profile ``ci``, 60 examples): no judge may crash or time out on a legal program.
Nightly (``--fuzzptx-profile nightly --fuzzptx-judges reference,checker,ptxas,hardware``,
``pytest -n <gpus>``): every judge must agree on every program; a failure leaves a repro.
"""
from __future__ import annotations

import pytest
from hypothesis import given

import fuzzptx.strategies as S
from fuzzptx.pytest_plugin import check_program

CRASHES = ("checker:crash", "reference:crash", "ptxas:timeout", "hardware:fault")


def test_no_judge_crashes_on_legal_programs(fuzzptx_config):
    @fuzzptx_config.settings()
    @given(S.programs())
    def run(program):
        check_program(program, fuzzptx_config, fail_on=CRASHES)

    run()


def test_judges_agree_on_legal_programs(fuzzptx_config):
    if fuzzptx_config.profile != "nightly":
        pytest.skip("every disagreement fails only under --fuzzptx-profile nightly")

    @fuzzptx_config.settings()
    @given(S.programs())
    def run(program):
        check_program(program, fuzzptx_config)

    run()
