// The aten dialect table: one entry per aten op (name with overload), built from the
// registration hook of each op family, one file per family (families.h). Composite ops are
// decomposed into primitives (docs/ir-text.md).
#include "solar/lower/aten.h"

#include "families.h"
#include "op_table.h"

namespace solar::lower {
namespace {

const detail::Table& table() {
  static const detail::Table t = [] {
    detail::TableBuilder b("aten");
    // Forward ops, then the backward and optimizer ops of training graphs.
    b.add("aten_pointwise.cc", detail::register_pointwise_ops);
    b.add("aten_math.cc", detail::register_math_ops);
    b.add("aten_reduce.cc", detail::register_reduction_ops);
    b.add("aten_norm.cc", detail::register_norm_ops);
    b.add("aten_matmul.cc", detail::register_matmul_ops);
    b.add("aten_conv.cc", detail::register_conv_ops);
    b.add("aten_pool.cc", detail::register_pool_ops);
    b.add("aten_attention.cc", detail::register_attention_ops);
    b.add("aten_shape.cc", detail::register_shape_ops);
    b.add("aten_index.cc", detail::register_index_ops);
    b.add("aten_random.cc", detail::register_random_ops);
    b.add("aten_loss.cc", detail::register_loss_ops);
    b.add("aten_train.cc", detail::register_training_ops);
    return b.take();
  }();
  return t;
}

}  // namespace

bool aten_op_known(std::string_view op) { return table().contains(op); }

LowerResult lower_aten(const OpTrace& trace, const LowerOptions& options) {
  LowerResult r = detail::lower_with_table(trace, options, table(), "aten");
  detail::recognize_masks_in(r);
  return r;
}

}  // namespace solar::lower
