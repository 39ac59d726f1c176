"""The loop frontend fuzzed with hypothesis: generated loop programs, valid and mutated (random
constants, tensors, statements, expressions, subscripts, guards, loop bounds, nesting and
model() loops, then random edits of their text), go through the parser, the recorder, the C++
lifting and, when small enough, the interpreter and the executor (validation). Every outcome
is a result or a solar.UserError of a known kind in one line: never another exception, never
a hang. The run is bounded: FUZZ_SECONDS in all (SOLAR_FUZZ_SECONDS, default 60), each
program at most EXAMPLE_SECONDS."""

from __future__ import annotations

import os
import random
import signal
import string
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import solar
from conftest import EXAMPLES
from solar.errors import LOOP_REFUSALS
from solar.frontends.loopir import checks
from solar.frontends.loopir import program as loop_program
from solar.frontends.loopir import validation as loop_validation

FUZZ_SECONDS = float(os.environ.get("SOLAR_FUZZ_SECONDS", "60"))
EXAMPLE_SECONDS = 30
# The loop language's refusals, its budgets, and the executor's refusal of a value it cannot
# store (NaN or infinity into an integer tensor: bad_argument).
KINDS = set(LOOP_REFUSALS) | {"too_large", "bad_argument"}
SMALL_WORK = 20_000  # iteration points under which a program is also run and validated

_START = {"t": None}


def _out_of_time(share: float) -> bool:
    """Whether this test's share of FUZZ_SECONDS is spent (the clock starts at the first
    example of the first test)."""
    if _START["t"] is None:
        _START["t"] = time.monotonic()
    return time.monotonic() - _START["t"] > FUZZ_SECONDS * share


class Hang(Exception):
    """A program ran past EXAMPLE_SECONDS."""


def _alarm(signum, frame):
    raise Hang(f"a program ran past {EXAMPLE_SECONDS} s")


def check_outcome(text: str, folder: Path) -> None:
    """Reads, records, lifts and (small programs) validates `text`: the outcome is a result
    or a one-line refusal of a known kind; anything else fails the test."""
    path = folder / "prog.py"
    path.write_text(text)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, EXAMPLE_SECONDS)
    try:
        lp = loop_program.load(str(path))
        graph, trace_ids = loop_program.lift(lp)
        if checks.work_points(lp.trace) <= SMALL_WORK:
            loop_program.check_runnable(str(path), {}, lp)
            section = loop_validation.validate(lp, graph, trace_ids, seconds=EXAMPLE_SECONDS)
            assert section["status"] in ("passed", "failed")
    except solar.UserError as e:
        message = str(e)
        assert getattr(e, "kind", None) in KINDS, (getattr(e, "kind", None), message)
        assert "\n" not in message and message.startswith(str(path)), message
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ----------------------------------------------------------------------- generated programs

WEIRD_CONSTANTS = ["0", "-3", "2.5", "10 ** 10 ** 8", "2 ** 63", "10.0 ** 400", "(-8) ** 0.5",
                   "1 / 0", "N * 0", "N // 2", "sqrt(N)", "max(N, 3)", "inf", "-inf",
                   "2 ** 64 // 2 ** 60", "99999999999999999999", "N ** N ** N", "exp(1000)",
                   "log(0)", "min()", "x", "undefined", "'text'", "True", "N % 0"]
WEIRD_BOUNDS = ["range(x[0])", "range(10 ** 12)", "range({v} * {v})", "range(2.5)",
                "range(N, 0)", "range(-1)", "range(0, N, 0)", "range(0, N, -1)", "range(t)",
                "range(99999999999999999999)", "range(N, {v})", "range({v} // 2 + 1)",
                "range(1, 2, 3, 4)", "range()", "len(x)", "x", "range(N - {v}, N + {v})"]
INTRINSICS = ["exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sigmoid", "sin", "cos", "abs",
              "relu", "floor", "ceil", "gelu", "print", "open", "eval", "len", "range"]
BINOPS = ["+", "-", "*", "/", "**", "//", "%", "@", "<<", "&"]
TENSORS = {"x": ["N"], "a": ["N", "M"], "b": ["M", "N"], "idx": ["N"], "y": None}


# The generator draws from one random.Random seeded by hypothesis: uniform choices, where
# hypothesis's own draws favour their simplest values (and so would the hostile ones).


class Rnd(random.Random):
    """The generator's random choices; `hostile`: whether its program mixes in hostile parts
    (half of them do: the other half reach the lifting and the interpreter more often)."""

    def __init__(self, seed: int):
        super().__init__(seed)
        self.hostile = self.random() < 0.5


def pick(rnd: Rnd, good, bad=(), odds: int = 8):
    """One of `good`, or, in a hostile program, one time in `odds` one of `bad`."""
    if bad and rnd.hostile and rnd.randrange(odds) == 0:
        return rnd.choice(list(bad))
    return rnd.choice(list(good))


def subscript_term(rnd, loop_vars, has_local: bool) -> str:
    v = rnd.choice(loop_vars) if loop_vars else "0"
    w = rnd.choice(loop_vars) if loop_vars else "1"
    c = rnd.randint(-2, 3)
    return pick(rnd, [v, v, v, f"{v} + {c}", f"{c} * {v} + 1", f"N - 1 - {v}", "0", "1",
                      f"{v} - {w}"],
                [f"{v} * {w}", f"{v} // 2", f"x[{v}]", "2.5", "10 ** 20", "-1", f"-{v}",
                 "M - 1", "99999999999999999999", "t" if has_local else "z",
                 f"{v} + " + " + ".join(["1"] * rnd.randint(1, 40)) + " - 3"])


def element(rnd, loop_vars, name: str, dims, has_local: bool) -> str:
    n = len(dims) if rnd.randrange(20) else rnd.randint(0, 3)
    subs = [subscript_term(rnd, loop_vars, has_local) for _ in range(n)]
    return f"{name}[{', '.join(subs)}]" if subs else f"{name}[()]"


def expression(rnd, loop_vars, y_dims, has_local: bool, depth: int = 0) -> str:
    if depth >= 4 or rnd.randrange(3) == 0:
        kind = rnd.randrange(10)
        if kind <= 5:
            name = pick(rnd, ["x", "a", "b", "x", "a", "idx"], ["y", "s", "q"])
            dims = TENSORS.get(name) or y_dims
            return element(rnd, loop_vars, name, dims, has_local)
        if kind <= 7:
            return pick(rnd, ["1.0", "0.5", "2", "N", "M", "-1"],
                        ["inf", "1e300", "99999999999999999999", "2 ** 62", "True", "'s'",
                         "None", "z"] + loop_vars)
        return "t" if has_local else "0.25"

    def sub() -> str:
        return expression(rnd, loop_vars, y_dims, has_local, depth + 1)

    form = rnd.randrange(12)
    if form <= 3:
        return f"({sub()} {pick(rnd, ['+', '-', '*', '/'], ['**', '//', '%', '@', '<<'])} {sub()})"
    if form == 4:
        return f"-{sub()}"
    if form == 5:
        return f"{pick(rnd, INTRINSICS[:13], INTRINSICS[13:])}({sub()})"
    if form == 6:
        return f"{rnd.choice(['max', 'min'])}({', '.join(sub() for _ in range(rnd.randint(1, 4)))})"
    if form == 7:
        return f"where({sub()} > {sub()}, {sub()}, {sub()})"
    if form == 8:
        return f"({sub()} if {sub()} < {sub()} else {sub()})"
    if form == 9:
        name = rnd.choice(["x", "a", "b"])
        dtype = pick(rnd, ["bf16", "f16", "i8"], ["nope"])
        return f'cast({element(rnd, loop_vars, name, TENSORS[name], has_local)}, "{dtype}")'
    if form == 10:  # a long chain
        n = rnd.choice([2, 10, 300, 700])
        op = pick(rnd, [" + ", " - ", " * "], [" / ", " ** "])
        return "(" + op.join(sub() if k < 3 else "0.5" for k in range(n)) + ")"
    return f"({sub()} < {sub()} <= {sub()})"


def nest(rnd: Rnd, y_dims):
    """One loop nest: in a clean program a valid one (loops over the target's dimensions and
    reduction loops, reads indexed by loop variables of matching extent), else anything."""
    return clean_nest(rnd, y_dims) if not rnd.hostile else hostile_nest(rnd, y_dims)


def clean_nest(rnd: Rnd, y_dims):
    reduce_ = rnd.random() < 0.5 or not y_dims
    loops = [(f"v{d}", e) for d, e in enumerate(y_dims)]  # (variable, extent name)
    if reduce_:
        loops += [(f"r{k}", rnd.choice(["N", "M"])) for k in range(rnd.randint(1, 2))]
    rnd.shuffle(loops)
    lines, indent = [], "    "
    for d, (v, e) in enumerate(loops):
        same = [u for u, f in loops[:d] if f == e]
        bound = f"range({same[0]} + 1)" if same and rnd.random() < 0.3 else f"range({e})"
        lines.append(f"{indent}for {v} in {bound}:")
        indent += "    "
    if loops and rnd.random() < 0.2:
        v, e = rnd.choice(loops)
        lines.append(f"{indent}if {v} + 1 < {e}:")
        indent += "    "
    by_extent = {e: [v for v, f in loops if f == e] for e in ("N", "M")}

    def read(name: str) -> str:
        subs = [rnd.choice(by_extent[e]) if by_extent[e] and rnd.random() < 0.85 else "0"
                for e in TENSORS[name]]
        return f"{name}[{', '.join(subs)}]"

    def value(depth: int = 0) -> str:
        if depth >= 3 or rnd.random() < 0.35:
            return read(rnd.choice(["x", "a", "b"])) if rnd.random() < 0.8 else \
                rnd.choice(["1.0", "0.5", "2", "N"])
        form = rnd.randrange(6)
        if form <= 2:
            return f"({value(depth + 1)} {rnd.choice(['+', '-', '*'])} {value(depth + 1)})"
        if form == 3:
            return f"{rnd.choice(INTRINSICS[:13])}({value(depth + 1)})"
        if form == 4:
            return f"where({value(depth + 1)} > 0, {value(depth + 1)}, {value(depth + 1)})"
        n = rnd.choice([3, 50, 400] if depth == 0 else [3, 10])
        return "(" + rnd.choice([" + ", " - "]).join(value(depth + 1) for _ in range(n)) + ")"

    expr = value()
    for v, e in loops:  # every loop variable indexes something
        if v not in expr:
            expr += f" + {'x' if e == 'N' else 'b'}[{v}{'' if e == 'N' else ', 0'}]"
    target = f"y[{', '.join(f'v{d}' for d in range(len(y_dims)))}]" if y_dims else "y[()]"
    if not loops:
        return []
    statement = (rnd.choice([f"{target} += {expr}", f"{target} = max({target}, {expr})",
                             f"{target} = min({expr}, {target})",
                             f"{target} *= (1.0 + 0.01 * tanh({expr}))"]) if reduce_
                 else f"{target} = {expr}")
    return [*lines, indent + statement]


def hostile_nest(rnd: Rnd, y_dims):
    depth = pick(rnd, [1, 1, 2, 2, 3, 3, 4], [0, 6, 8])
    loop_vars = ["i", "j", "k", "l", "m", "n", "o", "p"][:depth]
    lines, indent = [], "    "
    for d, v in enumerate(loop_vars):
        outer = loop_vars[d - 1] if d else None
        good = ["range(N)", "range(M)", "range(1, N)", "range(0, N, 2)", "range(3)"]
        if outer:
            good += [f"range({outer} + 1)", f"range({outer}, N)",
                     f"range({outer} - 2, {outer} + 1)"]
        bound = pick(rnd, good, [b.format(v=outer or "N") for b in WEIRD_BOUNDS])
        lines.append(f"{indent}for {v} in {bound}:")
        indent += "    "
        if rnd.randrange(6) == 0:
            guard = pick(rnd, [f"0 <= {v} - 1 < N", f"{v} < N - 1", f"{v} == 0",
                               f"{v} <= {loop_vars[0]}", f"{v} + 1 < M"],
                         [f"x[{v}] > 0", f"{v} != 1", f"{v} * {v} < 3", f"{v} < 2 or {v} > 3",
                          f"not {v} < 2"], odds=4)
            lines.append(f"{indent}if {guard}:")
            indent += "    "
    body = []
    has_local = rnd.random() < 0.5
    if has_local:
        body.append(f"t = {expression(rnd, loop_vars, y_dims, False)}")
    target = element(rnd, loop_vars, pick(rnd, ["y"], ["x", "s", "t"]), y_dims, has_local)
    value = expression(rnd, loop_vars, y_dims, has_local)
    body.append(pick(rnd, [f"{target} = {value}", f"{target} += {value}",
                           f"{target} *= {value}", f"{target} -= {value}",
                           f"{target} = max({target}, {value})",
                           f"{target} = min({value}, {target})"],
                     [f"{target} /= {value}", f"{value}", f"{target}, t = {value}, 1",
                      "pass", "while True:\n" + indent + "    pass"]))
    return [*lines, *(indent + b for b in body)]


def program_text(rnd: Rnd) -> str:
    n, m = rnd.randint(1, 6), rnd.randint(1, 6)
    y_dims = rnd.choice([["N"], ["N", "M"], ["M", "N"], []])
    lines = ["from solar.loopir import *", f"N, M = {n}, {m}",
             f"W = {pick(rnd, ['2'], WEIRD_CONSTANTS)}"]
    dtype = rnd.choice(["f32", "bf16", "f64", "i32"])
    fill = rnd.choice(["", "", ", fill=-inf", ", fill=1.0", ", fill=W"])
    lines += ['x = Tensor("N", role="input")', 'a = Tensor("N, M", role="input")',
              'b = Tensor("M, N", role="weight")', 'idx = Tensor("N", dtype="i64", role="input")',
              f'y = Tensor("{", ".join(y_dims)}", dtype="{dtype}", role="output"{fill})', "",
              "@kernel", "def f(x, a, b, idx, y):",
              f'    s = Tensor("{", ".join(y_dims)}")']
    for _ in range(rnd.randint(1, 2)):
        lines += nest(rnd, y_dims)
    lines += ["", "def model():"]
    call = pick(rnd, ["f(x, a, b, idx, y)"],
                ["f(x, a, b, y)", "f(x, b, a, idx, y)", "f(x, a, b, idx, y, N)",
                 "f(x, reshape(a, \"M, N\"), b, idx, y)", "f(x, permute(a, (1, 0)), b, idx, y)",
                 "f(x, a, b, idx, x)", "f(x, slice(a, 0, 0, 1), b, idx, y)"], odds=4)
    loop = pick(rnd, ["", "", "for r in range(2):", "for r in range(N):", "if N:"],
                ["for r in range(10 ** 12):", "for r in range(W):", "if N > 2:",
                 "for r in range(N, 0, -1):", "if 0:"])
    if loop:
        lines += [f"    {loop}", f"        {call}"]
    else:
        lines.append(f"    {call}")
    return "\n".join(lines) + "\n"


programs = st.integers(0, 2**64 - 1).map(lambda seed: program_text(Rnd(seed)))


# ----------------------------------------------------------------------- mutations

SEEDS = [p for p in sorted((EXAMPLES / "loops").glob("*.py")) if not p.name.endswith("_torch.py")]
TOKENS = ["for", "in", "range(", ")", "(", "[", "]", ":", "=", "+=", "*", "+", "-", "//", "%",
          "if", "and", "or", "not", "<=", "<", "==", "!=", "i", "j", "k", "N", "x", "y", "1",
          "0", "-1", "2.5", "exp(", "max(", "Tensor(", "\"N,N\"", ",", "\n", "    ", "import os",
          "lambda", "x.shape", "def", "@kernel", "model()", "'", "\"", "#", "\\", "**",
          "10 ** 10 ** 8", "99999999999999999999", "for r in range(10**12):\n    ", "\x00",
          "(" * 30, "-" * 50, "    " * 30]


def mutate(text: str, rnd: random.Random, steps: int) -> str:
    for _ in range(steps):
        op = rnd.randrange(6)
        pos = rnd.randrange(len(text) + 1)
        if op == 0:  # delete a span
            text = text[:pos] + text[pos + rnd.randrange(1, 12):]
        elif op == 1:  # insert a token
            text = text[:pos] + rnd.choice(TOKENS) + text[pos:]
        elif op == 2:  # insert random printable characters
            text = text[:pos] + "".join(rnd.choice(string.printable) for _ in range(3)) + text[pos:]
        elif op == 3:  # duplicate or drop a line
            lines = text.split("\n")
            k = rnd.randrange(len(lines))
            lines.insert(k, lines[k]) if rnd.random() < 0.5 else lines.pop(k)
            text = "\n".join(lines)
        elif op == 4:  # change a number
            digits = [m for m in range(len(text)) if text[m].isdigit()]
            if digits:
                m = rnd.choice(digits)
                text = text[:m] + str(rnd.randrange(10)) + text[m + 1:]
        else:  # indent a line deeper
            lines = text.split("\n")
            k = rnd.randrange(len(lines))
            lines[k] = "    " * rnd.randrange(1, 4) + lines[k]
            text = "\n".join(lines)
    return text


# ----------------------------------------------------------------------- the tests

# More examples than fill each test's share of FUZZ_SECONDS (a program takes 20-200 ms);
# past its share a test only lets hypothesis draw the rest (about a millisecond each).
FUZZ = settings(max_examples=int(os.environ.get("SOLAR_FUZZ_EXAMPLES", "6000")), deadline=None,
                database=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("loopir-fuzz")


@FUZZ
@given(text=programs)
def test_generated_programs_are_a_result_or_a_known_refusal(folder, text):
    if _out_of_time(0.5):
        return
    check_outcome(text, folder)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 8), which=st.integers(0, 1 << 16),
       generated=programs)
def test_mutated_programs_are_a_result_or_a_known_refusal(folder, seed, steps, which, generated):
    if _out_of_time(1.0):
        return
    rnd = random.Random(seed)
    base = generated if which % 2 else SEEDS[which % len(SEEDS)].read_text()
    check_outcome(mutate(base, rnd, steps), folder)
