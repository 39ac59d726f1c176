"""Loop programs past the language's limits and budgets, broken ones, and `solar validate` past
its work budget or time limit (ids `loops-`; docs/loop-language.md, "Limits" and "Refusals")."""

from __future__ import annotations

from pathlib import Path

from . import Case

HEAD = """\
from solar.loopir import Tensor, kernel, exp

N = 8
x = Tensor("N, 2100", role="input")
y = Tensor("N", role="output")
"""

KERNEL = HEAD + """

@kernel
def f(x, y):
    for i in range(N):
        {statement}


def model():
    f(x, y)
"""


def kernel(statement: str) -> str:
    return KERNEL.format(statement=statement)


def model(body: str) -> str:
    """A program whose kernel copies x and whose model() runs `body` after calling it."""
    return kernel("y[i] = x[i, 0]") + "".join(f"    {line}\n" for line in body.splitlines())


def deep_nest(depth: int) -> str:
    lines = [HEAD, "", "@kernel", "def f(x, y):"]
    indent = "    "
    for k in range(depth):
        lines.append(f"{indent}for i{k} in range(1):")
        indent += "    "
    return "\n".join(lines + [indent + "y[i0] += x[i0, 0]", "", "def model():", "    f(x, y)", ""])


def _big_example(folder: Path) -> None:
    """The causal attention example at its own sizes: 3.5e10 points for the interpreter."""
    root = Path(__file__).resolve().parents[3]
    text = (root / "examples" / "loops" / "causal_attention.py").read_text()
    (folder / "attention.py").write_text(text)


SUM = " + ".join(f"x[i, {k}]" for k in range(2001))

CASES = [
    Case("loops-constant-10-pow-10-pow-8", ["analyze", "p.py"], "usage",
         "p.py:2: the constant `BIG`: 10 ** 100000000 leaves the 64-bit integer range",
         files={"p.py": "from solar.loopir import *\nBIG = 10 ** 10 ** 8\n"}, limit_s=20),
    Case("loops-constant-past-64-bits", ["validate", "p.py"], "usage", "64-bit range",
         files={"p.py": "from solar.loopir import *\nN = 2 ** 40\nM = N * N * N\n"}, limit_s=20),
    Case("loops-literal-past-64-bits-in-a-subscript", ["analyze", "p.py"], "usage",
         "p.py:11: the integer 99999999999999999999 is outside the 64-bit range",
         files={"p.py": kernel("y[i] = x[i * 99999999999999999999, 0]")}, limit_s=20),
    Case("loops-set-past-64-bits", ["analyze", "p.py", "--set", "N=99999999999999999999"],
         "usage", "--set N=99999999999999999999: integers are within 64 bits",
         files={"p.py": kernel("y[i] = x[i, 0]")}, limit_s=20),
    Case("loops-constant-overflows-a-float", ["analyze", "p.py"], "outside_language",
         "p.py:2: outside the language: the constant `C`",
         files={"p.py": "from solar.loopir import *\nC = 10.0 ** 400\n"}, limit_s=20),
    Case("loops-complex-constant", ["analyze", "p.py"], "outside_language", "not a real number",
         files={"p.py": "from solar.loopir import *\nC = (-8) ** 0.5\n"}, limit_s=20),
    Case("loops-model-loop-of-10-pow-12", ["analyze", "p.py"], "usage",
         "p.py:16: model() runs more than 1,000,000 steps",
         files={"p.py": model("for i in range(10**12):\n    pass")}, limit_s=20),
    Case("loops-10-pow-7-kernel-calls", ["validate", "p.py"], "usage", "step budget",
         files={"p.py": model("for l in range(10**7):\n    f(x, y)")}, limit_s=20),
    Case("loops-kernel-calls-past-the-trace-size", ["analyze", "p.py"], "usage",
         "p.py:18: the recorded trace grows past 1,000,000 nodes",
         files={"p.py": model("for a in range(100):\n    for b in range(9000):\n"
                              "        f(x, y)")}, limit_s=60),
    Case("loops-model-loop-step-zero", ["analyze", "p.py"], "non_constant_bound",
         "p.py:16: non-constant bound: a loop step is a non-zero integer",
         files={"p.py": model("for l in range(0, 4, 0):\n    f(x, y)")}, limit_s=20),
    Case("loops-sum-past-the-terms-limit", ["analyze", "p.py"], "outside_language",
         "p.py:11: outside the language: the value written to `y` holds 2,001 terms",
         files={"p.py": kernel(f"y[i] = {SUM}")}, limit_s=30),
    Case("loops-locals-doubling", ["analyze", "p.py"], "outside_language", "2,048 terms",
         files={"p.py": kernel("t = x[i, 0]\n" + "        t = t + t\n" * 64 + "        y[i] = t")},
         limit_s=20),
    Case("loops-expression-nests-past-the-depth-limit", ["analyze", "p.py"], "outside_language",
         "p.py:11: outside the language: statements and expressions nest deeper than 100 levels",
         files={"p.py": kernel("y[i] = " + "exp(" * 120 + "x[i, 0]" + ")" * 120)}, limit_s=20),
    Case("loops-locals-nest-past-the-depth-limit", ["validate", "p.py"], "outside_language",
         "the local `t` nests 101 levels deep",
         files={"p.py": kernel("t = x[i, 0]\n" + "        t = exp(t)\n" * 120
                               + "        y[i] = t")},
         limit_s=20),
    Case("loops-syntax-error", ["analyze", "p.py"], "outside_language",
         "p.py:4: outside the language: not Python syntax",
         files={"p.py": HEAD.replace('role="input")', 'role="input"')}, limit_s=20),
    Case("loops-syntax-error-validate", ["validate", "p.py", "--json", "out.json"],
         "outside_language", "p.py:4: outside the language: not Python syntax",
         files={"p.py": HEAD.replace('role="input")', 'role="input"')}, limit_s=20),
    Case("loops-200-deep-nest", ["analyze", "p.py"], "outside_language",
         "outside the language: not Python syntax: too many levels of indentation",
         files={"p.py": deep_nest(200)}, limit_s=20),
    Case("loops-98-deep-nest", ["analyze", "p.py"], "outside_language",
         "nest deeper than 100 levels", files={"p.py": deep_nest(98)}, limit_s=20),
    Case("loops-parser-gives-up", ["analyze", "p.py"], "outside_language",
         "p.py: outside the language: the program nests too deeply for Python's parser",
         files={"p.py": "from solar.loopir import *\nN = " + "-" * 100000 + "1\n"}, limit_s=30),
    Case("loops-import-inside-a-function", ["analyze", "p.py"], "outside_language",
         "p.py:3: outside the language: `import solar.loopir`",
         files={"p.py": "import os\ndef model():\n    import solar.loopir\n"}, limit_s=20),
    Case("loops-nul-byte", ["analyze", "p.py"], "outside_language", "outside the language",
         files={"p.py": b"from solar.loopir import *\nN = 8\x00\n"}, limit_s=20),
    Case("loops-validate-past-the-work-budget", ["validate", "attention.py"], "usage",
         "iteration points with the loop interpreter (about", setup=_big_example,
         env={"SOLAR_MEMORY_LIMIT": "1T"}, limit_s=60),
    Case("loops-validate-time-limit", ["validate", "p.py", "--json", "out.json"], "usage",
         "the loop interpreter ran past its time limit of 1e-09 s",
         files={"p.py": kernel("y[i] = exp(x[i, 0])")},
         env={"SOLAR_LOOP_VALIDATION_SECONDS": "1e-9"}, limit_s=30),
    Case("loops-validate-time-limit-not-a-number", ["validate", "p.py"], "usage",
         "SOLAR_LOOP_VALIDATION_SECONDS='soon': expected a positive number of seconds",
         files={"p.py": kernel("y[i] = exp(x[i, 0])")},
         env={"SOLAR_LOOP_VALIDATION_SECONDS": "soon"}, limit_s=30),
]
