"""The engine: draw programs, judge them in batches, turn verdicts into findings, write records
and repros.  ``fuzzptx run`` and ``fuzzptx campaign`` are this engine at two scales."""
