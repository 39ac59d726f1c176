"""The analysis report as a Python object: attribute access over its JSON (solar.report.v1)."""

from __future__ import annotations

import copy
import json
from typing import Any, Iterator


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Record(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class Record:
    """A read-only view of a JSON object: `r.totals.macs` is `r["totals"]["macs"]`."""

    __slots__ = ("_data",)

    def __init__(self, data: dict):
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name: str) -> Any:
        try:
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
        return [k for k in self._data if isinstance(k, str) and k.isidentifier()]

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

    __slots__ = ("_analysis", "_sections")

    def __init__(self, analysis: Any):
        data = json.loads(analysis.to_json())
        object.__setattr__(self, "_analysis", analysis)
        object.__setattr__(self, "_sections", {})
        super().__init__(data)

    def attach_section(self, name: str, section: dict) -> None:
        """Adds a section computed outside the C++ analysis (the frontends' `validation`
        and `crosscheck`): it is a field of the report and of its JSON."""
        if name in self._data and name not in self._sections:
            raise ValueError(f"the report already has a field {name!r}")
        self._sections[name] = section
        self._data[name] = section

    def get_section(self, name: str) -> dict | None:
        """An attached section, or None."""
        return self._sections.get(name)

    def __getattr__(self, name: str) -> Any:
        if name == "devices":
            return self._devices()
        return super().__getattr__(name)

    def __getitem__(self, key: str) -> Any:
        if key == "devices":
            return self._devices()
        return super().__getitem__(key)

    def _devices(self) -> dict[str, Record]:
        devs = self._data.get("devices", [])
        if isinstance(devs, dict):
            return {k: _wrap(v) for k, v in devs.items()}
        return {_device_key(d, i): _wrap(d) for i, d in enumerate(devs)}

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON text (solar.report.v1), as the CLI's --json writes it."""
        text = self._analysis.to_json(-1 if indent is None else indent)
        if not self._sections:
            return text
        data = json.loads(text)
        data.update(self._sections)
        return json.dumps(data, indent=indent, allow_nan=False)

    def table(self, top: int = 10) -> str:
        """The readable table, as `solar analyze` prints it."""
        return self._analysis.table(top)

    def save(self, path: str) -> None:
        """Writes the JSON report to `path`."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json() + "\n")

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        name = self._data.get("program", {}).get("name", "?")
        return f"<solar.Report {name} on {', '.join(self._devices())}>"
