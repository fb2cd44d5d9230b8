"""fuzzptx: property-based fuzzing and differential testing of tensor-core PTX."""
__version__ = "0.1.0"
