"""``python -m fuzzptx``: the ``fuzzptx`` command where its script is not on PATH (a package copied
onto a GPU machine, a checkout without an install)."""
from fuzzptx.cli import main

raise SystemExit(main())
