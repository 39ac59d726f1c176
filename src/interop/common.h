// Text helpers the interop writers share (not installed).
#pragma once

#include <string>
#include <string_view>

#include "solar/cost/work.h"
#include "solar/interop/workload.h"

namespace solar::interop::detail {

// Text fit for a YAML comment line: no newlines, and no braces (AccelForge expands Jinja
// delimiters such as `{#` anywhere in the file).
std::string comment_safe(std::string_view s);

// A YAML double-quoted scalar.
std::string yaml_quote(std::string_view s);

// none matmul convolution attention
std::string_view contraction_name(cost::ContractionClass c);

// "op 'name' (aten::mm): matmul, 1500 MACs; live points 1500 of a 1500-point box; combine
// mul($0,$1), reduce sum" — what Solar says about one einsum, for comments.
std::string einsum_summary(const Workload& w, const WorkloadEinsum& e);

}  // namespace solar::interop::detail
