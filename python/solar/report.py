"""The analysis report as a Python object: attribute access over its JSON (solar.report.v1)."""

from __future__ import annotations

import copy
import functools
import json
import keyword
import re
from typing import Any, Iterator

from .atomic_write import write_atomically
from .html import compact
from .report_distributed import distributed_block

# Counts (docs/report-json.md, "Conventions") are JSON integers up to 64 bits and decimal
# strings beyond; Python's int is exact at any size, so a Report gives ints for them all.
# A count field is named for what it counts: macs*, *flops*, *bytes*, special_ops, ...
_COUNT_KEY = re.compile(r"macs|flops|bytes|special_ops|^operations$|^box$|^footprint$")
_DIGITS = re.compile(r"[0-9]+")


def _count_to_int(value: Any) -> Any:
    """A count field's value with its decimal strings as ints (lists, per-dtype and
    per-device maps included)."""
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        return int(value)
    if isinstance(value, list):
        return [_count_to_int(v) for v in value]
    if isinstance(value, dict):
        return {k: _count_to_int(v) for k, v in value.items()}
    return value


@functools.lru_cache(maxsize=None)
def _is_count_key(key: str) -> bool:
    return _COUNT_KEY.search(key) is not None


def _ints_for_counts(obj: dict) -> dict:
    """json.loads object_hook: a count field's decimal strings become ints."""
    for key, value in obj.items():
        if isinstance(value, (str, list, dict)) and _is_count_key(key):
            obj[key] = _count_to_int(value)
    return obj


def _count_to_int_fields(value: Any) -> Any:
    """A copy of an attached section (built in Python, where the crosscheck writes counts
    past 64 bits as strings, as the JSON does) with its count fields as ints."""
    if isinstance(value, dict):
        return _ints_for_counts({k: _count_to_int_fields(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_count_to_int_fields(v) for v in value]
    return value


def parse_report_json(text: str) -> dict:
    """Report JSON text as a dict whose counts are all ints (the text keeps strings)."""
    return json.loads(text, object_hook=_ints_for_counts)


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Record(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


# Attribute names for JSON fields named by a Python keyword (`op.class` cannot be written):
# an op's `class` (report-json.md) is `op.op_class`; the JSON keeps its name.
_KEYWORD_FIELDS = {"op_class": "class"}


class Record:
    """A read-only view of a JSON object: `r.totals.macs` is `r["totals"]["macs"]`; a field
    named by a Python keyword is read by its alias (`op.op_class` is `op["class"]`)."""

    __slots__ = ("_data",)

    def __init__(self, data: dict):
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name: str) -> Any:
        try:
            if name not in self._data and _KEYWORD_FIELDS.get(name) in self._data:
                name = _KEYWORD_FIELDS[name]
            return _wrap(self._data[name])
        except KeyError:
            raise AttributeError(
                f"no field {name!r} (fields: {', '.join(self._data)})"
            ) from None

    def __getitem__(self, key: str) -> Any:
        try:
            return _wrap(self._data[key])
        except KeyError:
            raise KeyError(f"{key!r} (keys: {', '.join(map(str, self._data))})") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("report records are read-only; use to_dict() for a copy")

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record):
            return self._data == other._data
        return self._data == other

    def __dir__(self) -> list[str]:
        aliases = [a for a, k in _KEYWORD_FIELDS.items() if k in self._data]
        return [k for k in self._data if isinstance(k, str) and k.isidentifier()
                and not keyword.iskeyword(k)] + aliases

    def keys(self):
        return self._data.keys()

    def items(self):
        return ((k, _wrap(v)) for k, v in self._data.items())

    def get(self, key: str, default: Any = None) -> Any:
        return _wrap(self._data[key]) if key in self._data else default

    def to_dict(self) -> dict:
        """A deep copy of the underlying JSON object."""
        return copy.deepcopy(self._data)

    def __repr__(self) -> str:
        return f"Record({', '.join(map(str, self._data))})"


def _device_key(d: dict, index: int) -> str:
    for key in ("id", "device_id", "device"):
        if isinstance(d.get(key), str):
            return d[key]
    return str(index)


class Report(Record):
    """What solar.analyze returns.

    Fields are those of the JSON report (docs/report-json.md), e.g. `report.totals.macs`;
    `report.devices` is keyed by device id: `report.devices["H100_SXM"].fused.seconds`.
    """

    __slots__ = ("_analysis", "_sections", "_parsed", "_program", "_summary")

    def __init__(self, analysis: Any):
        object.__setattr__(self, "_analysis", analysis)
        object.__setattr__(self, "_sections", {})
        object.__setattr__(self, "_parsed", None)
        object.__setattr__(self, "_program", {})  # fields added to `program` (its mode)
        object.__setattr__(self, "_summary", None)  # _data without "ops", parsed apart

    @property
    def _data(self) -> dict:  # parsed on first use: a 400,000-op report takes seconds
        if self._parsed is None:
            data = parse_report_json(self._analysis.to_json())
            data.update(_count_to_int_fields(self._sections))
            if self._program:
                data["program"] = {**data.get("program", {}), **self._program}
            object.__setattr__(self, "_parsed", data)
        return self._parsed

    def _fields(self) -> dict:
        """_data where it is parsed, else every field of it but the per-op rows ("ops",
        which the C++ JSON leaves out on request and nothing else differs by): the device
        figures and the field names without parsing one row per op (85% of a 126-layer
        model's JSON, 0.47 of 0.5 s)."""
        if self._parsed is not None:
            return self._parsed
        if self._summary is None:
            data = parse_report_json(self._analysis.to_json(-1, False))
            data.update(_count_to_int_fields(self._sections))
            if self._program:
                data["program"] = {**data.get("program", {}), **self._program}
            object.__setattr__(self, "_summary", data)
        return self._summary

    def describe_program(self, **fields: Any) -> None:
        """Adds fields to the report's `program` object, such as a PyTorch module's `mode`
        ("training" or "eval", docs/report-json.md); the text report names the mode."""
        self._program.update(fields)
        for data in (self._parsed, self._summary):
            if data is not None:
                data["program"] = {**data.get("program", {}), **fields}

    def attach_section(self, name: str, section: dict, replace: bool = False) -> None:
        """Adds a section computed outside the C++ analysis (the frontends' `validation`
        and `crosscheck`): it is a field of the report and of its JSON. replace=True
        replaces a field the analysis wrote (a model plan's `system` section)."""
        if name in self._fields() and name not in self._sections and not replace:
            raise ValueError(f"the report already has a field {name!r}")
        self._sections[name] = section
        for data in (self._parsed, self._summary):
            if data is not None:
                data[name] = _count_to_int_fields(section)

    def get_section(self, name: str) -> dict | None:
        """An attached section, or None."""
        return self._sections.get(name)

    def __getattr__(self, name: str) -> Any:
        if name == "devices":
            return self._devices()
        if name != "ops":  # any other field: without parsing the per-op rows
            data = self._fields()
            key = name if name in data else _KEYWORD_FIELDS.get(name)
            if key in data:
                return _wrap(data[key])
        return super().__getattr__(name)

    def __getitem__(self, key: str) -> Any:
        if key == "devices":
            return self._devices()
        if key != "ops" and key in self._fields():
            return _wrap(self._fields()[key])
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key != "ops":
            data = self._fields()
            return _wrap(data[key]) if key in data else default
        return super().get(key, default)

    def _devices(self) -> dict[str, Record]:
        devs = self._fields().get("devices", [])
        if isinstance(devs, dict):
            return {k: _wrap(v) for k, v in devs.items()}
        return {_device_key(d, i): _wrap(d) for i, d in enumerate(devs)}

    def to_json(self, indent: int | None = 2, ops: bool = True) -> str:
        """The report as JSON text (solar.report.v1), as the CLI's --json writes it; with
        ops=False, without the per-op rows."""
        text = self._analysis.to_json(-1 if indent is None else indent, ops)
        if not self._sections and not self._program:
            return text
        data = json.loads(text)
        data.update(self._sections)
        if self._program:
            data["program"] = {**data.get("program", {}), **self._program}
        return json.dumps(data, indent=indent, allow_nan=False)

    def table(self, top: int = 10, by: str = "module", depth: int = 3) -> str:
        """The readable table, as `solar analyze` prints it, followed by a short block for
        each attached `distributed` / `validation` / `crosscheck` section. by: the breakdown
        after the device tables, "module" (the module tree down to `depth`; the top ops when no op
        names a module), "line" (source lines) or "op" (the top ops)."""
        text = _with_mode_line(self._analysis.table(top, by, depth), self._program.get("mode"))
        dist = self._sections.get("distributed")
        blocks = [b for b in (distributed_block(dist, json.loads(self.to_json(None)) if dist
                                                else {}),
                              _validation_block(self._sections.get("validation")),
                              _crosscheck_block(self._sections.get("crosscheck"))) if b]
        if not blocks:
            return text
        if text and not text.endswith("\n"):
            text += "\n"
        return text + "\n" + "\n".join(blocks)

    def ski_slope_svg(self) -> str:
        """The ski-slope chart (log-log Q(S), docs/report-json.md `ski_slope`) as SVG text, as
        `solar analyze --ski-slope PATH` writes it; solar.UserError when the cache-aware level
        was skipped."""
        return self._analysis.ski_slope_svg()

    def _repr_html_(self) -> str:
        """What Jupyter shows: the summary, the devices table and the ski-slope as inline SVG
        (no script, a few tens of kB); solar.html.write(report, PATH) writes the whole
        interactive page (docs/html-report.md)."""
        return compact(json.loads(self.to_json(None, ops=False)))

    def save(self, path: str) -> None:
        """Writes the JSON report to `path` (whole or not at all, solar.atomic_write)."""
        write_atomically(path, self.to_json() + "\n")

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        name = self._data.get("program", {}).get("name", "?")
        return f"<solar.Report {name} on {', '.join(self._devices())}>"


_MODE_WORDS = {
    "training": "training (as the program left its module: batch norm uses the batch's "
                "statistics, dropout drops; --eval for eval mode)",
    "eval": "eval (batch norm uses its running statistics, dropout is the identity)",
    "mixed": "mixed (some submodules train, others are in eval mode, as the program left them)",
}


def _with_mode_line(text: str, mode: str | None) -> str:
    """The table with a `mode:` line after its title line (a PyTorch module's mode)."""
    if not mode:
        return text
    title, _, rest = text.partition("\n")
    return f"{title}\nmode: {_MODE_WORDS.get(mode, mode)}\n{rest}"


def _num(x: Any) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def _validation_block(v: dict | None) -> str:
    """The `validation` section in a few lines (docs/validation.md)."""
    if not v:
        return ""
    status = str(v.get("status", "?"))
    loud = "" if status == "passed" else "!!! "
    lines = [f"{loud}Validation ({v.get('tool', '?')}, seed {v.get('seed', '?')}): "
             f"{status.upper()}"]
    if v.get("reason"):
        lines.append(f"  {v['reason']}")
    lines += [_check_line(o) for o in v.get("outputs", [])]
    ref = v.get("reference")
    if ref:  # loop programs: a reference program's outputs against both (docs/loop-language.md)
        lines.append(f"  reference {ref.get('source')} ({ref.get('framework')}): "
                     f"{str(ref.get('status', '?')).upper()}")
        for o in ref.get("outputs", []):
            lines.append(_check_line(o["loop_program"], "loop program vs reference: "))
            lines.append(_check_line(o["graph"], "graph vs reference: "))
    first = v.get("first_divergent_op")
    if first:
        where = f" ({first['framework_op']}" if first.get("framework_op") else ""
        if where and first.get("file"):
            where += f" at {first['file']}:{first.get('line', 0)}"
        where += ")" if where else ""
        lines.append(f"  first divergent op: {first.get('op') or first.get('reason')}{where}")
    for g in v.get("given", []):
        lines.append(f"  given: outputs of random op {g['op']}"
                     + (f" ({g['origin']})" if g.get("origin") else ""))
    for e in v.get("excluded", []):
        lines.append(f"  excluded: {e['name']}: {e['reason']}")
    return "\n".join(lines) + "\n"


def _check_line(o: dict, label: str = "") -> str:
    """One compared output of a validation: the verdict with the rule it was judged by
    (|got - ref| <= atol*scale + rtol*|ref| per element), the element that came closest to
    its allowance (its error against that allowance) and the largest errors."""
    verdict = "ok  " if o.get("passed") else "FAIL"
    scale = o.get("scale")
    atol = f"{o.get('atol')}" + (f"*{scale:.3g}" if scale not in (None, 1, 1.0) else "")
    rule = f"|got - ref| <= {atol} + {o.get('rtol')}*|ref|"
    if o.get("passed"):
        head = f"every element within {rule}"
    else:
        head = f"{o.get('mismatches', '?')} element(s) outside {rule}"
    err, allow = o.get("tightest_error"), o.get("tightest_allowance")
    if err is None and "tightest_error" in o:
        margin = "; an element's error is not finite"
    elif not err:
        margin = "; every element equal" if "tightest_error" in o else ""
    elif allow:
        margin = f"; tightest element {err:.3g} of its allowance {allow:.3g} ({err / allow:.0%})"
    else:
        margin = f"; tightest element {err:.3g} against an allowance of 0 (exact)"
    if o.get("compared_at"):  # a narrower precision than the output's own dtype
        head += f" (at {o['compared_at']}'s tolerance, the precision it was computed in)"
    return (f"  {verdict} {label}{o['name']} {o.get('dtype', '')}{o.get('shape', '')}: {head}"
            f"{margin}; max abs error {_num(o.get('max_abs_error'))}, max rel error "
            f"{_num(o.get('max_rel_error'))}")


def _crosscheck_block(c: dict | None) -> str:
    """The `crosscheck` section in a few lines (docs/validation.md)."""
    if not c:
        return ""
    status = str(c.get("status", "?"))
    loud = "!!! " if status == "differ" else ""
    head = f"{loud}Cross-check with FlopCounterMode: {status}"
    if status == "skipped":
        return head + f" ({c.get('reason', '')})\n"
    lines = [head + f" (Solar {c.get('solar_macs')} MAC, counter {c.get('counter_macs')} MAC; "
             f"{c.get('compared_ops', 0)} op(s) compared)"]
    # Ops Solar left unanalyzed are listed at the top of the table (and warned about on
    # stderr): counted here, not repeated.
    unanalyzed = [e for e in c.get("per_op", []) if str(e.get("note", "")).startswith(
        "unanalyzed by Solar")]
    for e in c.get("per_op", []):
        if (e.get("agree") is True and not e.get("note")) or e in unanalyzed:
            continue
        mark = {True: "agree", False: "explained" if e.get("explained") else "DIFFER",
                None: "not compared"}[e.get("agree")]
        lines.append(f"  {mark}: {e['op']}: Solar {e['solar_macs']}, counter "
                     f"{e['counter_macs']}" + (f": {e['note']}" if e.get("note") else ""))
    if unanalyzed:
        lines.append(f"  not compared: {len(unanalyzed)} aten op(s) Solar left unanalyzed "
                     "(listed at the top)")
    return "\n".join(lines) + "\n"
