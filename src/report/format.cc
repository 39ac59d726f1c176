#include "format.h"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

namespace solar::report::detail {

std::string op_label(const ir::Op& op) {
  std::string fw = op.origin.op;
  if (fw.empty() || fw == op.name) return op.name;
  // "aten::addmm.default" -> "addmm": the namespace and the default overload say nothing.
  if (std::size_t colons = fw.rfind("::"); colons != std::string::npos) fw = fw.substr(colons + 2);
  if (fw.size() > 8 && fw.ends_with(".default")) fw.resize(fw.size() - 8);
  const std::size_t dot = op.name.find('.');
  if (dot == std::string::npos || dot + 1 >= op.name.size()) return fw;
  std::string step = op.name.substr(dot + 1);
  // A frontend's temporaries are "t<trace id>.<step><counter>": the counter is no name.
  const std::string stem = op.name.substr(0, dot);
  const bool temp = stem.size() > 1 && stem[0] == 't' &&
                    stem.find_first_not_of("0123456789", 1) == std::string::npos;
  if (temp)
    while (step.size() > 1 && std::isdigit(static_cast<unsigned char>(step.back()))) step.pop_back();
  return fw + ": " + step;
}

std::string op_class(const ir::Op& op, const cost::Work& w) {
  if (!w.analyzed) return "unanalyzed";
  if (w.dead) return "dead";
  switch (op.kind()) {
    case ir::OpKind::Einsum:
      switch (w.contraction) {
        case cost::ContractionClass::Matmul: return "matmul";
        case cost::ContractionClass::Convolution: return "convolution";
        case cost::ContractionClass::Attention: return "attention";
        case cost::ContractionClass::None: break;
      }
      return op.einsum().reduce != ir::Reduce::None && !op.einsum().reduced_indices().empty()
                 ? "reduction"
                 : "elementwise";
    case ir::OpKind::Move: return "move";
    case ir::OpKind::Opaque: return "opaque";
    case ir::OpKind::Unanalyzed: return "unanalyzed";
    case ir::OpKind::Repeat: return "repeat";
    case ir::OpKind::Collective: return "collective";
  }
  return "?";
}

std::string si(double value, const std::string& unit) {
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T", "P", "E", "Z", "Y"};
  if (!std::isfinite(value)) return fmt::format("{} {}", value, unit);
  std::size_t p = 0;
  double v = value;
  while (std::fabs(v) >= 999.95 && p + 1 < std::size(kPrefixes)) {
    v /= 1000;
    ++p;
  }
  if (p == 0 && v == std::floor(v)) return fmt::format("{} {}", static_cast<long long>(v), unit);
  return fmt::format("{:.4g} {}{}", v, kPrefixes[p], unit);
}

std::string human_seconds(double seconds) {
  if (seconds == 0) return "0 s";
  if (!std::isfinite(seconds)) return fmt::format("{} s", seconds);
  double a = std::fabs(seconds);
  if (a < 1e-6) return fmt::format("{:.4g} ns", seconds * 1e9);
  if (a < 1e-3) return fmt::format("{:.4g} us", seconds * 1e6);
  if (a < 1) return fmt::format("{:.4g} ms", seconds * 1e3);
  return fmt::format("{:.4g} s", seconds);
}

Count unanalyzed_bytes_estimate(const ir::Graph& g, const ir::Op& op) {
  Count bytes;
  for (ir::TensorId t : op.inputs) bytes += g.tensor(t).size_bytes();
  for (ir::TensorId t : op.outputs) bytes += g.tensor(t).size_bytes();
  return bytes;
}

std::string unanalyzed_framework_op(const ir::Op& op) {
  if (op.kind() == ir::OpKind::Unanalyzed) return op.unanalyzed().framework_op;
  // The text parser records the op's own name when no framework op was given.
  if (!op.origin.op.empty() && op.origin.op != op.name) return op.origin.op;
  return std::string(ir::op_kind_name(op.kind()));
}

std::string unanalyzed_reason(const ir::Op& op, const cost::Work& w) {
  if (op.kind() == ir::OpKind::Unanalyzed && !op.unanalyzed().reason.empty())
    return op.unanalyzed().reason;
  return w.note;
}

}  // namespace solar::report::detail
