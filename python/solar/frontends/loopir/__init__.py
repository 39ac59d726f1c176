"""The loop-language frontend (docs/loop-language.md): a loop program is parsed with `ast`
(syntax.py), its model() interpreted into an OpTrace of `loopir::nest` and intrinsic ops
(record.py), lifted to an EinsumGraph by the C++ loopir table (src/lower/loopir.cc), and
run by its own NumPy interpreter (interpret.py) for validation (program.py)."""
