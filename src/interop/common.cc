#include "common.h"

#include <fmt/format.h>

namespace solar::interop::detail {

std::string comment_safe(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\n' || c == '\r') out += ' ';
    else if (c == '{') out += '(';
    else if (c == '}') out += ')';
    else out += c;
  }
  return out;
}

std::string yaml_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string_view contraction_name(cost::ContractionClass c) {
  switch (c) {
    case cost::ContractionClass::None: return "none";
    case cost::ContractionClass::Matmul: return "matmul";
    case cost::ContractionClass::Convolution: return "convolution";
    case cost::ContractionClass::Attention: return "attention";
  }
  return "none";
}

std::string einsum_summary(const Workload& w, const WorkloadEinsum& e) {
  (void)w;
  std::string what = e.contraction == cost::ContractionClass::None
                         ? std::string("not a contraction (0 MACs)")
                         : fmt::format("{}, {} MACs", contraction_name(e.contraction), e.macs.str());
  std::string origin = e.framework_op.empty() || e.framework_op == e.solar_name
                           ? ""
                           : fmt::format(" ({})", e.framework_op);
  std::string points =
      e.counted ? fmt::format("{} live points of a {}-point box", e.live_points.str(),
                              e.box_points.str())
                : fmt::format("mask not countable by Solar: the {}-point box", e.box_points.str());
  return comment_safe(fmt::format("op '{}'{}: {}; {}; combine {}, reduce {}", e.solar_name,
                                  origin, what, points, e.combine, e.reduce));
}

}  // namespace solar::interop::detail
