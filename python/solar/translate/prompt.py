"""The prompt of `solar translate` (docs/translate.md): the loop language's reference (the
language sections of docs/loop-language.md), the translation conventions Solar checks, worked
examples (PyTorch twins and their loop programs from examples/loops/, and one module whose
parameters live inside it), then the source; and the feedback that goes back after a
rejected attempt.

Everything the model sees before the source is fixed text read from the repository, so its
digest (`language_reference_version`) names the prompt a translation was made with and keys
the cache: editing the language reference or an example invalidates cached translations.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ..errors import user_error

# Bumped when the wording below changes in a way the digest would not show (it shows all
# of it: this is for readers of provenance files).
PROMPT_VERSION = "1"

# The worked examples, in the order the prompt shows them: examples/loops/<name>.py beside
# <name>_torch.py. Chosen to cover the language: a contraction (gemm), reductions from a
# fill (softmax), kernel parameters and weights (layernorm), guards and strides (conv2d),
# triangular bounds (causal_attention), model-level loops over stacked weights (robot_mlp),
# a recurrence that reads the step before (cumsum).
DEFAULT_EXAMPLES = ("gemm", "softmax", "layernorm", "conv2d", "causal_attention", "robot_mlp",
                    "cumsum")
# The example of module parameters (state_dict names), kept with this package.
MODULE_EXAMPLE = "mlp_module"

# docs/loop-language.md from this heading up to (not including) the next one listed in
# _REFERENCE_END: the language itself, without the CLI, the worked report and the lifting.
_REFERENCE_START = "## A first program"
_REFERENCE_END = "## Running and validating"

LANGUAGE_NAMES = {"pytorch": "PyTorch", "jax": "JAX", "numpy": "NumPy", "triton": "Triton",
                  "cuda": "CUDA", "c": "C"}
FENCE = {"pytorch": "python", "jax": "python", "numpy": "python", "triton": "python",
         "cuda": "cuda", "c": "c"}

TASK = """\
You translate tensor programs into Solar's loop language: a small language of affine loop
nests, written in a restricted Python syntax, that Solar parses and interprets (it never runs
it as Python) and lifts to an einsum graph for performance analysis. The complete language
reference follows, then the conventions your translation must keep so that Solar can check
it, then worked examples. Your translation is accepted only when Solar runs it and the source
on the same data and every output matches."""

CONVENTIONS = """\
# Translation conventions (Solar checks each one)

Solar runs the source program and your loop program on the same data and compares every
output under the output dtype's tolerance. For that, your program must name and shape its
tensors like the source's:

1. **Arguments.** Declare one tensor per argument of the source's entry point (`forward` of
   `class Model`, or a function `forward` / `reference`), named exactly as the argument, of
   the dtype and shape of the array `get_inputs()` gives in that position: role="input"
   (role="weight" when the argument is a parameter passed in). Solar feeds it that array.
2. **Parameters inside modules.** Declare each parameter and buffer of the model that the
   computation reads as a role="weight" tensor named after its `state_dict()` key with every
   `.` written `__` (`self.fc = nn.Linear(IN, OUT)` gives `fc__weight`, dims "OUT, IN", and
   `fc__bias`; `layers.0.weight` gives `layers__0__weight`; a Flax variable
   `params/Dense_0/kernel` gives `params__Dense_0__kernel`; a key that starts with a digit
   gets a leading `_`). Keep the source's layout: never transpose a weight in its
   declaration. Solar feeds it the model's own values.
3. **Sizes.** Name every size constant after the source's module-level constant it stands for
   (`batch_size`, `in_features`, ...) with the same value, and write every extent in terms of
   those constants. Solar validates at small sizes by setting those constants to smaller
   values in both programs (like `--set NAME=VALUE`); a number derived by hand breaks that.
4. **Dtypes.** Every argument, weight and output has the dtype of the source's tensor.
5. **Outputs.** One role="output" tensor per value the source returns, in the order it
   returns them (by name when it returns a dict), of the same shape.
6. Everything else (intermediates, accumulators, masks) is yours: scratch tensors, constants
   with a `fill`.

The user message lists the source's tensors as Solar found them by running it.

# Your answer

Answer with exactly one ```python code block holding the complete loop program, starting with
`from solar.loopir import ...`. Use only the loop language: no other import, no attribute
access, no Python builtins, no file, process or network access. Solar refuses anything else
and tells you why; if an attempt is rejected you get the reason (a refusal with its line, the
names or shapes that do not line up, or the first output that differs and by how much) and
answer again with the whole corrected program."""


def repository_root() -> Path:
    """A folder that holds docs/loop-language.md and examples/loops/: $SOLAR_ROOT when set,
    the Solar checkout this package sits in, or the copy an installed package carries
    (solar/reference/, python/bindings/CMakeLists.txt)."""
    env = os.environ.get("SOLAR_ROOT")
    here = Path(__file__).resolve()
    candidates = ([Path(env)] if env else []) + [here.parents[3], here.parents[1] / "reference"]
    for root in candidates:
        docs, loops = root / "docs" / "loop-language.md", root / "examples" / "loops"
        if docs.is_file() and loops.is_dir():
            return root
    raise user_error("solar translate prompts with docs/loop-language.md and examples/loops/, "
                     "which neither a Solar checkout nor the installed package holds here; set "
                     "SOLAR_ROOT to a checkout", "io")


def language_reference(root: Optional[Path] = None) -> str:
    """The language sections of docs/loop-language.md (A first program ... Refusals)."""
    text = ((root or repository_root()) / "docs" / "loop-language.md").read_text(encoding="utf-8")
    start, end = text.find(_REFERENCE_START), text.find(_REFERENCE_END)
    if start < 0 or end < start:
        raise user_error(f"docs/loop-language.md: the sections '{_REFERENCE_START}' ... "
                         f"'{_REFERENCE_END}' the prompt quotes are missing", "parse")
    return "# The loop language (reference)\n\n" + text[start:end].strip() + "\n"


@dataclasses.dataclass
class Example:
    name: str
    source: str  # the PyTorch program
    program: str  # its loop program
    note: str


def examples(names: Sequence[str] = DEFAULT_EXAMPLES, root: Optional[Path] = None) -> List[Example]:
    """The worked examples: examples/loops/<name>_torch.py with <name>.py, then the module
    example of this package."""
    folder = (root or repository_root()) / "examples" / "loops"
    out = []
    for name in names:
        src, prog = folder / f"{name}_torch.py", folder / f"{name}.py"
        if not (src.is_file() and prog.is_file()):
            raise user_error(f"no example '{name}' (examples/loops/{name}.py and "
                             f"{name}_torch.py)", "usage")
        out.append(Example(name, src.read_text(encoding="utf-8"),
                           prog.read_text(encoding="utf-8"),
                           "its weights are forward arguments, so they keep the arguments' "
                           "names (convention 1)"))
    here = Path(__file__).resolve().parent / "examples"
    out.append(Example(MODULE_EXAMPLE, (here / f"{MODULE_EXAMPLE}_torch.py").read_text("utf-8"),
                       (here / f"{MODULE_EXAMPLE}.py").read_text("utf-8"),
                       "its parameters live inside modules, so they are named after their "
                       "state_dict keys (convention 2)"))
    return out


def system_prompt(example_names: Sequence[str] = DEFAULT_EXAMPLES) -> str:
    """The fixed part of the prompt: task, language reference, conventions, examples."""
    root = repository_root()
    parts = [TASK, language_reference(root), CONVENTIONS, "# Worked examples"]
    for i, ex in enumerate(examples(example_names, root), 1):
        parts.append(f"## Example {i}: {ex.name} ({ex.note})\n\nSource (PyTorch):\n\n"
                     f"```python\n{ex.source.rstrip()}\n```\n\nTranslation:\n\n"
                     f"```python\n{ex.program.rstrip()}\n```")
    return "\n\n".join(parts) + "\n"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def reference_version(system: str) -> str:
    """The language-reference version: the digest of everything fixed the model is told."""
    return f"v{PROMPT_VERSION}-" + digest(system)[:16]


# ----------------------------------------------------------------------- the source


def _fmt_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def tensor_table(listing: Dict[str, Any]) -> str:
    """The source's tensors as the user message lists them (from the reference run)."""
    lines = []
    where = listing.get("where", "")
    if listing.get("inputs"):
        lines.append(f"inputs (the entry point's arguments, in order){where}:")
        for t in listing["inputs"]:
            lines.append(f"  {t['name']:<24} {t['dtype'] or '?':<6} {_fmt_shape(t['shape'])}")
    for s in listing.get("scalars", []):
        lines.append(f"  {s['name']:<24} a Python value ({s['value']!r}): a constant in your "
                     "program, not a tensor")
    if listing.get("weights"):
        lines.append(f"weights (the model's parameters and buffers: key -> loop name){where}:")
        for t in listing["weights"]:
            pair = f"{t['source_name']} -> {t['name']}"
            lines.append(f"  {pair:<40} {t['dtype'] or '?':<6} {_fmt_shape(t['shape'])}")
    if listing.get("outputs"):
        lines.append(f"outputs (in the order the source returns them){where}:")
        for i, t in enumerate(listing["outputs"]):
            label = t.get("name") or str(i)
            lines.append(f"  {label:<24} {t['dtype'] or '?':<6} {_fmt_shape(t['shape'])}")
    if listing.get("constants"):
        lines.append("size constants: " + ", ".join(f"{k}={v}" for k, v in
                                                   listing["constants"].items()))
    return "\n".join(lines)


def user_prompt(source_text: str, source_name: str, lang: str,
                listing: Optional[Dict[str, Any]]) -> str:
    """The first user message: what to translate, the tensors Solar found, the source."""
    parts = [f"Translate this {LANGUAGE_NAMES[lang]} program (`{source_name}`) into the loop "
             "language."]
    if listing:
        parts.append("The source's tensors, as Solar found them by running it:\n\n"
                     + tensor_table(listing))
    else:
        parts.append("Solar does not run this source; name its tensors after the source's "
                     "arguments and parameters as the conventions say.")
    parts.append(f"```{FENCE[lang]}\n{source_text.rstrip()}\n```")
    return "\n\n".join(parts) + "\n"


def first_messages(system: str, user: str) -> List[Dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def messages_digest(messages: List[Dict[str, str]]) -> str:
    return digest(json.dumps(messages, sort_keys=True, ensure_ascii=False))


def feedback(attempt: int, attempts: int, kind: str, message: str) -> str:
    """The user message after a rejected attempt."""
    return (f"Attempt {attempt} of {attempts} was not accepted ({KIND_WORDS.get(kind, kind)}):\n\n"
            f"{message.rstrip()}\n\nAnswer again with the complete corrected program in one "
            "```python block.")


# A rejected attempt's kind, in words (provenance `failure.kind`).
KIND_WORDS = {
    "no_program": "no program in the answer",
    "unsafe": "refused: not loop-language code",
    "refused": "refused by the loop-language parser",
    "sizes": "size constants differ from the source's",
    "binding": "tensors do not line up with the source's",
    "too_big": "too much work at the test sizes",
    "run_error": "the program failed to run",
    "lifting": "Solar's lifted graph differs from the program",
    "mismatch": "outputs differ from the source's",
}
