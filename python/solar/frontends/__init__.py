"""Frontends: thin recorders that turn a framework program into an OpTrace (docs/optrace.md).

They contain no cost logic; lowering (C++, solar._core.lower_optrace) turns the trace into
an EinsumGraph.
"""
