// Opaque kernel "pool_argmax" (opaque_pool.h): the indices of max pooling, window by window,
// following PyTorch's CPU kernels (aten/src/ATen/native/cpu/MaxPoolKernel.cpp and
// AdaptiveMaxPoolKernel.cpp) so that validation can compare them exactly.
#include "opaque_pool.h"

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "solar/ir/attrs.h"
#include "solar/util/errors.h"

namespace solar::exec {
namespace {

[[noreturn]] void fail(const ir::OpaqueOp& op, const std::string& what) {
  throw UserError(UserError::Kind::InvalidGraph,
                  fmt::format("opaque \"{}\": {}", op.function, what));
}

std::vector<std::int64_t> ints_attr(const ir::OpaqueOp& op, const char* key) {
  return ir::int_list_attr(op.attrs, key, fmt::format("opaque \"{}\": ", op.function));
}

// One spatial dimension's window for output position o: taps start, start + step, ... < end.
struct Window {
  std::int64_t start, end, step;
};

}  // namespace

void run_pool_argmax(const ir::OpaqueOp& op, std::span<const Buffer* const> inputs,
                     std::span<Buffer* const> outputs) {
  auto bad = [&](const std::string& what) { fail(op, what); };
  if (inputs.size() != 1 || outputs.size() != 1) bad("takes one input and has one output");
  const Buffer& x = *inputs[0];
  Buffer& out = *outputs[0];
  if (out.storage() != Storage::I64 || out.dtype() == ir::DType::Bool)
    bad("the output holds indices and needs an integer dtype");
  const bool adaptive = ir::find_int(op.attrs, "adaptive").value_or(0) != 0;
  std::vector<std::int64_t> kernel, stride, pad, dil;
  std::size_t nd = 0;
  if (adaptive) {
    nd = ints_attr(op, "output_size").size();
  } else {
    kernel = ints_attr(op, "kernel");
    stride = ints_attr(op, "stride");
    pad = ints_attr(op, "padding");
    dil = ints_attr(op, "dilation");
    nd = kernel.size();
    if (stride.size() != nd || pad.size() != nd || dil.size() != nd)
      bad("needs `kernel`, `stride`, `padding` and `dilation` with one integer per spatial "
          "dimension (or `adaptive` = 1 with `output_size`)");
    for (std::size_t d = 0; d < nd; ++d)
      if (kernel[d] < 1 || stride[d] < 1 || dil[d] < 1 || pad[d] < 0)
        bad("kernel, stride and dilation must be positive and padding non-negative");
  }
  const auto& is = x.shape();
  const auto& os = out.shape();
  if (nd == 0 || is.size() < nd || os.size() != is.size())
    bad(fmt::format("input [{}] and output [{}] do not fit a {}-d pooling", fmt::join(is, ","),
                    fmt::join(os, ","), nd));
  const std::size_t lead = is.size() - nd;
  std::int64_t planes = 1, in_plane = 1, out_plane = 1;
  for (std::size_t d = 0; d < lead; ++d) {
    if (is[d] != os[d]) bad("input and output differ in a leading (batch, channel) dimension");
    planes *= is[d];
  }
  for (std::size_t d = lead; d < is.size(); ++d) {
    in_plane *= is[d];
    out_plane *= os[d];
  }
  if (adaptive &&
      ints_attr(op, "output_size") != std::vector<std::int64_t>(os.begin() + lead, os.end()))
    bad("`output_size` differs from the output's spatial shape");

  auto window = [&](std::size_t d, std::int64_t o) {
    const std::int64_t L = is[lead + d];
    if (adaptive) {
      const std::int64_t O = os[lead + d];
      return Window{(o * L) / O, ((o + 1) * L + O - 1) / O, 1};
    }
    std::int64_t s = o * stride[d] - pad[d];
    const std::int64_t e = std::min(s + (kernel[d] - 1) * dil[d] + 1, L);
    while (s < 0) s += dil[d];
    return Window{s, e, dil[d]};
  };

  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    std::int64_t* o = out.data<std::int64_t>();
    std::vector<std::int64_t> opos(nd, 0), tap(nd, 0);
    std::vector<Window> win(nd);
    for (std::int64_t q = 0; q < out_plane; ++q) {
      // q's coordinates in the output plane, row-major.
      for (std::int64_t d = static_cast<std::int64_t>(nd) - 1, r = q; d >= 0; --d) {
        opos[d] = r % os[lead + d];
        r /= os[lead + d];
      }
      bool empty = false;
      for (std::size_t d = 0; d < nd; ++d) {
        win[d] = window(d, opos[d]);
        tap[d] = win[d].start;
        empty = empty || win[d].start >= win[d].end;
      }
      auto offset = [&]() {
        std::int64_t off = 0;
        for (std::size_t d = 0; d < nd; ++d) off = off * is[lead + d] + tap[d];
        return off;
      };
      const std::int64_t first = offset();
      for (std::int64_t p = 0; p < planes; ++p) {
        const T* plane = in + p * in_plane;
        std::int64_t best = first;
        if (!empty) {
          double best_v = -std::numeric_limits<double>::infinity();
          for (std::size_t d = 0; d < nd; ++d) tap[d] = win[d].start;
          while (true) {
            const std::int64_t at = offset();
            const double v = static_cast<double>(plane[at]);
            if (v > best_v || std::isnan(v)) {
              best_v = v;
              best = at;
            }
            // Next tap, row-major over the window.
            std::int64_t d = static_cast<std::int64_t>(nd) - 1;
            for (; d >= 0; --d) {
              tap[d] += win[d].step;
              if (tap[d] < win[d].end) break;
              tap[d] = win[d].start;
            }
            if (d < 0) break;
          }
        }
        o[p * out_plane + q] = best;
      }
    }
  };
  switch (x.storage()) {
    case Storage::F32: run(float{}); break;
    case Storage::F64: run(double{}); break;
    case Storage::I64: run(std::int64_t{}); break;
  }
}

}  // namespace solar::exec
