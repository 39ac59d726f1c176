// The per-module binding functions that core.cc calls to fill solar._core.
#pragma once

#include <string>

#include <nanobind/nanobind.h>

#include "solar/util/count.h"

namespace solar::python {

void bind_ir(nanobind::module_& m);
void bind_hw(nanobind::module_& m);
void bind_report(nanobind::module_& m);
void bind_cli(nanobind::module_& m);
void bind_exec(nanobind::module_& m);
void bind_lower(nanobind::module_& m);
void bind_insight(nanobind::module_& m);
void bind_interop(nanobind::module_& m);
void bind_parallel(nanobind::module_& m);

// An exact count as a Python int (counts may exceed 64 bits).
inline nanobind::object count_to_py(Count c) {
  return nanobind::steal(PyLong_FromString(c.str().c_str(), nullptr, 10));
}

}  // namespace solar::python
