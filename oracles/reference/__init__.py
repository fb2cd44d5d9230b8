"""The reference judge: a pure-Python interpreter of the PTX subset for one CTA.

``run_program(program)`` -> ``RefResult`` (per output element: exact bits, a set of
allowed values, or undefined); ``compare(program, ref, observed)`` -> mismatches.
"""
from .errors import BadAddress, MissingInput, ReferenceError_, StepLimit, Unsupported
from .run import run_in_numerics, run_program
from .result import Mismatch, OutputBuffer, RefResult, compare

__all__ = ["run_program", "run_in_numerics", "compare", "RefResult", "OutputBuffer", "Mismatch", "ReferenceError_",
           "Unsupported", "BadAddress", "MissingInput", "StepLimit"]
