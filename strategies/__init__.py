"""Hypothesis strategies for tensor-core PTX programs, small to large.

operands -> descriptors -> instructions -> pipelines (stages) -> control -> programs,
plus mutations (illegal programs, each naming the rule it breaks) and a coverage
report (``python -m fuzzptx.strategies.coverage -n N``).  Everything reads the ISA
catalogue (``fuzzptx.isa.forms()``); shrinking heads for the simplest program.
"""
from .descriptors import SmemTile, descriptors
from .instructions import forms, instruction_programs, instructions, single_instruction_programs, spec_only_programs
from .mutations import MUTATIONS, Mutation, illegal_programs, mutated
from .operands import immediates, register_types, sparse_metadata
from .pipelines import Mma, PipeState, Stage, Touch, Unit, Wait, mmas, stages, units
from .control import Loop, Side, UniformIf, scripts
from .programs import programs, warp_programs, wgmma_plans, wgmma_programs, wgmma_sweeps
from .render import WgmmaPlan, render

__all__ = [
    "SmemTile", "descriptors", "forms", "instructions", "instruction_programs", "single_instruction_programs",
    "spec_only_programs", "wgmma_sweeps",
    "MUTATIONS", "Mutation", "illegal_programs", "mutated", "immediates", "register_types",
    "sparse_metadata", "Mma", "PipeState", "Stage", "Touch", "Unit", "Wait", "mmas", "stages", "units",
    "Loop", "Side", "UniformIf", "scripts", "programs", "warp_programs", "wgmma_plans", "wgmma_programs",
    "WgmmaPlan", "render",
]
