// The aten dialect table: one entry per aten op (name with overload), built from the
// registration hook of each op family, one file per family (families.h). Composite ops are
// decomposed into primitives (docs/ir-text.md).
#include "solar/lower/aten.h"

#include <string_view>
#include <utility>

#include "families.h"
#include "op_table.h"

namespace solar::lower {
namespace {

const detail::Table& table() {
  static const detail::Table t = [] {
    using namespace detail;
    // Each family registers its forward ops and their backward ops.
    static constexpr std::pair<std::string_view, void (*)(const Register&)> kFamilies[] = {
        {"aten_pointwise.cc", register_pointwise_ops}, {"aten_math.cc", register_math_ops},
        {"aten_reduce.cc", register_reduction_ops},    {"aten_norm.cc", register_norm_ops},
        {"aten_matmul.cc", register_matmul_ops},       {"aten_conv.cc", register_conv_ops},
        {"aten_pool.cc", register_pool_ops},           {"aten_attention.cc", register_attention_ops},
        {"aten_shape.cc", register_shape_ops},         {"aten_pad.cc", register_pad_ops},
        {"aten_index.cc", register_index_ops},         {"aten_random.cc", register_random_ops},
        {"aten_loss.cc", register_loss_ops},           {"aten_rnn.cc", register_rnn_ops},
        {"aten_scan.cc", register_scan_ops},           {"aten_optimizer.cc", register_optimizer_ops},
        {"aten_collective.cc", register_c10d_ops}};
    TableBuilder b("aten");
    for (const auto& [file, hook] : kFamilies) b.add(file, hook);
    return b.take();
  }();
  return t;
}

}  // namespace

bool aten_op_known(std::string_view op) { return table().contains(op); }

LowerResult lower_aten(const OpTrace& trace, const LowerOptions& options) {
  LowerResult r = detail::lower_with_table(trace, options, table(), "aten");
  detail::recognize_masks_in(r, &trace);  // a buffer's band read at capture
  return r;
}

}  // namespace solar::lower
