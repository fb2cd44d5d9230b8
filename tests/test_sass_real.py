"""The pinned release's real-kernel SASS vocabulary ships with the package (a run's summary never
computes it): it must be the one the checkout's kernels and the pinned ptxas give."""
import json

import pytest

from fuzzptx.oracles import sass
from fuzzptx.oracles.ptxas import _version_of, find_ptxas
from fuzzptx.oracles.sass import real

needs_disassembler = pytest.mark.skipif(sass.disassembler() is None, reason="no disassembler")


def test_the_packaged_vocabulary_is_keyed_to_the_checkouts_kernels_and_the_pinned_release():
    got = json.loads(real.PACKAGED.read_text())
    texts = [f.read_text() for f in real.real_kernel_files()]
    assert got["key"] == real.key_of(texts, _version_of(str(find_ptxas()))), \
        "tests/data or the pinned ptxas changed: python -m fuzzptx.oracles.sass.real --write"
    assert got["kernels"] == len(texts) and len(got["forms"]) > 150
    assert real.real_vocabulary() == got


@pytest.mark.slow
@needs_disassembler
def test_the_packaged_vocabulary_is_what_ptxas_and_nvdisasm_give(tmp_path, monkeypatch):
    monkeypatch.setattr(real, "PACKAGED", tmp_path / "none.json")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    fresh = real.real_vocabulary(compute=True)
    assert fresh["forms"] == json.loads((real.Path(real.__file__).with_name("real_vocabulary.json")).read_text())["forms"]
