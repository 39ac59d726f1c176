// solar._core: the device database (devices are returned as copies, read-only).
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bindings.h"
#include "solar/cli/cli.h"
#include "solar/hw/database.h"
#include "solar/hw/device.h"
#include "solar/hw/system.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace solar::python {

// The process-wide database, loaded on first use (built-ins + SOLAR_ARCH_PATH).
hw::DeviceDb& device_db() {
  static hw::DeviceDb db = hw::DeviceDb::load_default();
  return db;
}

namespace {

// Peaks keyed by dtype name, as the text form and reports spell them.
std::map<std::string, hw::Sourced> by_name(const std::map<ir::DType, hw::Sourced>& m) {
  std::map<std::string, hw::Sourced> out;
  for (const auto& [dtype, s] : m) out.emplace(ir::dtype_name(dtype), s);
  return out;
}

}  // namespace

void bind_hw(nb::module_& m) {
  nb::class_<hw::Sourced>(m, "Sourced", "A number with its source and flag (V, V-rev, D, E, M).")
      .def_ro("value", &hw::Sourced::value)
      .def_ro("source", &hw::Sourced::source)
      .def_ro("flag", &hw::Sourced::flag)
      .def_ro("note", &hw::Sourced::note)
      .def("__float__", [](const hw::Sourced& s) { return s.value; })
      .def("__repr__", [](const hw::Sourced& s) {
        return fmt::format("<solar.Sourced {:g} [{}] {}>", s.value, s.flag, s.source);
      });

  nb::enum_<hw::UnitKind>(m, "UnitKind")
      .value("tensor", hw::UnitKind::Tensor)
      .value("vector", hw::UnitKind::Vector)
      .value("special", hw::UnitKind::Special);

  nb::class_<hw::ComputeUnit>(m, "ComputeUnit",
                              "Dense peak FLOP/s per dtype of one unit; 2:4 sparse peaks apart.")
      .def_ro("kind", &hw::ComputeUnit::kind)
      .def_ro("name", &hw::ComputeUnit::name)
      .def_prop_ro("peak", [](const hw::ComputeUnit& u) { return by_name(u.peak); })
      .def_prop_ro("sparse_2_4_peak",
                   [](const hw::ComputeUnit& u) { return by_name(u.sparse_2_4_peak); })
      .def_ro("clock_mhz", &hw::ComputeUnit::clock_mhz)
      .def("__repr__", [](const hw::ComputeUnit& u) {
        return fmt::format("<solar.ComputeUnit {} ({})>", u.name, hw::unit_kind_name(u.kind));
      });

  nb::class_<hw::MemorySpec>(m, "MemoryLevel", "Capacity (bytes) and bandwidth (bytes/s).")
      .def_prop_ro("name", [](const hw::MemorySpec& l) { return std::string(l.name()); })
      .def_ro("capacity", &hw::MemorySpec::capacity)
      .def_ro("bandwidth", &hw::MemorySpec::bandwidth)
      .def("__repr__", [](const hw::MemorySpec& l) {
        return fmt::format("<solar.MemoryLevel {}>", l.name());
      });

  nb::class_<hw::Device>(m, "Device", "A device of the database (a copy; read-only).")
      .def_ro("id", &hw::Device::id)
      .def_ro("name", &hw::Device::name)
      .def_ro("vendor", &hw::Device::vendor)
      .def_ro("kind", &hw::Device::kind)
      .def_ro("num_sms", &hw::Device::num_sms)
      .def_ro("units", &hw::Device::units)
      .def_ro("memory", &hw::Device::memory)
      .def_ro("sources", &hw::Device::sources)
      .def_ro("notes", &hw::Device::notes)
      .def_ro("file", &hw::Device::file)
      .def("peak", &hw::Device::peak, "kind"_a, "dtype"_a,
           "Peak FLOP/s of the fastest unit of `kind` for `dtype`, or None.")
      .def("sparse_2_4_peak", &hw::Device::sparse_2_4_peak, "kind"_a, "dtype"_a,
           "2:4 sparse peak (dense-equivalent FLOP/s) of that unit for `dtype`, or None.")
      .def("to_json", [](const hw::Device& d) { return cli::device_to_json(d).dump(2); },
           "The device as JSON (solar.device.v1).")
      .def("__str__", &cli::device_text)
      .def("__repr__", [](const hw::Device& d) {
        return fmt::format("<solar.Device {}: {}>", d.id, d.name);
      });

  m.def("device_ids", [] { return device_db().ids(); }, "Known device ids (sorted, plus host).");
  m.def("device", [](const std::string& id) { return device_db().get(id); }, "id"_a,
        "A copy of the device (case-insensitive id; `host` is detected on first use).");
  m.def("system_device",
        [](const std::string& arg, std::optional<int> nodes) {
          return hw::resolve_system(arg, nodes, device_db(), hw::SystemDb::builtin()).device;
        },
        "system"_a, "nodes"_a = nb::none(),
        "The device id of what a --system ARG [--nodes K] names (UserError when it names no "
        "system: an unknown id exits 6).");
  m.def("reload_devices", [] { device_db() = hw::DeviceDb::load_default(); },
        "Reloads the database (after SOLAR_ARCH_PATH changed).");
}

}  // namespace solar::python
