"""Test-only tooling: recorded ptxas experiments, the checker's differential sample, planted defects.

Not installed; tests import it as ``support`` (pytest's ``pythonpath = ["tests"]``), and benchmark and
report scripts put the repo's ``tests/`` directory on ``sys.path`` themselves.
"""
