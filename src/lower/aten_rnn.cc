// Recurrent layers: aten::lstm / gru / rnn_tanh / rnn_relu (the `.input` overloads that
// nn.LSTM/GRU/RNN call through torch._VF), captured as one trace op each
// (docs/torch-frontend.md, "Recurrent layers"). Each lowers as torch's CPU kernel
// (at::native RNN.cpp, FullLayer / ReversedFullLayer with pre-computed input projections)
// runs it: per layer and direction, the input projection of every step at once (at::linear
// on the whole sequence), then ONE repeat op whose body is one cell step (the hidden
// projection, the gates, the state update) with the hidden (and cell) state carried, the
// projected input sliced per step and the hidden state stacked (reversed for the backward
// direction); then the directions concatenated, the batch_first transposes (free views) and
// the final states stacked. Every einsum mirrors an aten op of the per-step capture
// (`--unroll`), so the counts equal its own except for the in-place writes through chunk
// views that the per-step trace records as as_strided_scatter (docs/torch-frontend.md).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "context.h"
#include "families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {
namespace {

enum class Cell { Lstm, Gru, RnnTanh, RnnRelu };

std::int64_t gate_count(Cell k) {
  switch (k) {
    case Cell::Lstm: return 4;
    case Cell::Gru: return 3;
    default: return 1;
  }
}

const char* cell_name(Cell k) {
  switch (k) {
    case Cell::Lstm: return "lstm";
    case Cell::Gru: return "gru";
    case Cell::RnnTanh: return "rnn_tanh";
    default: return "rnn_relu";
  }
}

// x[m, k] · w[n, k] -> out[m, n] (mm with w.t(): the index order of matmul_into).
void mm_t(Context& c, TensorId x, TensorId w, TensorId out) {
  const auto xs = c.t(x).shape, ws = c.t(w).shape;
  Space s;
  AffineExpr m = ix(s.add("m", xs[0])), k = ix(s.add("k", xs[1])), n = ix(s.add("n", ws[0]));
  c.einsum({x, w}, out, std::move(s), {{m, k}, {n, k}}, {m, n}, mul(arg(0), arg(1)), Reduce::Sum);
}

// at::linear of a 2-D x: addmm(b, x, w.t()) (a product, then `b + prod`), or mm without b.
void linear(Context& c, TensorId x, TensorId w, std::optional<TensorId> b, TensorId out) {
  if (!b) return mm_t(c, x, w, out);
  TensorId prod = c.temp("mm", c.t(out).shape, c.t(out).dtype);
  mm_t(c, x, w, prod);
  c.elementwise({*b, prod}, out, add(arg(0), arg(1)));
}

// out = f(in_0[:, off_0 : off_0 + H], in_1[:, off_1 : ...], ...): an elementwise op over
// column blocks, each a slice (a free view, as torch's unsafe_chunk views are) of its input.
void blocks(Context& c, std::vector<std::pair<TensorId, std::int64_t>> ins, TensorId out, Expr f) {
  const auto os = c.t(out).shape;
  std::vector<TensorId> inputs;
  for (const auto& [t, off] : ins) {
    if (off == 0 && c.t(t).shape == os) {
      inputs.push_back(t);
      continue;
    }
    TensorId s = c.temp("chunk", os, c.t(t).dtype);
    slice_into(c, t, s, 1, off, off + os[1], 1);
    inputs.push_back(s);
  }
  c.elementwise(std::move(inputs), out, std::move(f));
}

struct Layer {
  TensorId w_ih, w_hh, w_hr;
  std::optional<TensorId> b_ih, b_hh;
};

// One cell step as a graph of its own: params (x_t, h[, c], w_hh[, b_hh][, w_hr]); results
// the next h (and c). Mirrors at::native's cells with pre-computed input gates.
struct Body {
  std::shared_ptr<ir::Graph> graph;
  TensorId x, h, c, w_hh, b_hh, w_hr;  // params (invalid when absent)
  TensorId h_next, c_next;             // results
};

Body build_body(Context& outer, Cell kind, std::int64_t B, std::int64_t H, std::int64_t P, bool bias,
                bool proj, ir::DType dt) {
  const std::int64_t G = gate_count(kind);
  Body r;
  r.graph = std::make_shared<ir::Graph>();
  r.graph->name = fmt::format("{}_step", cell_name(kind));
  r.graph->frontend = "torch";
  Context c(outer.trace(), *r.graph);
  c.begin(outer.op());
  r.x = c.source("x_t", {B, G * H}, dt);
  r.h = c.source("h", {B, P}, dt);
  if (kind == Cell::Lstm) r.c = c.source("c", {B, H}, dt);
  r.w_hh = c.source("w_hh", {G * H, P}, dt);
  if (bias) r.b_hh = c.source("b_hh", {G * H}, dt);
  if (proj) r.w_hr = c.source("w_hr", {P, H}, dt);
  std::optional<TensorId> b_hh = bias ? std::optional<TensorId>(r.b_hh) : std::nullopt;
  auto block = [&](const char* name) { return c.temp(name, {B, H}, dt); };
  // linear_hh(h): addmm(b_hh, h, w_hh.t())
  TensorId hg = c.temp("hgates", {B, G * H}, dt);
  linear(c, r.h, r.w_hh, b_hh, hg);
  switch (kind) {
    case Cell::Lstm: {
      // gates = linear_hh(h).add_(x_t); chunk(4): i f g o; i, f, o sigmoid_, g tanh_
      TensorId gates = c.temp("gates", {B, G * H}, dt);
      c.elementwise({hg, r.x}, gates, add(arg(0), arg(1)));
      TensorId i = block("ingate"), f = block("forgetgate"), g = block("cellgate"),
               o = block("outgate");
      blocks(c, {{gates, 0}}, i, un(ExprOp::Sigmoid, arg(0)));
      blocks(c, {{gates, H}}, f, un(ExprOp::Sigmoid, arg(0)));
      blocks(c, {{gates, 2 * H}}, g, un(ExprOp::Tanh, arg(0)));
      blocks(c, {{gates, 3 * H}}, o, un(ExprOp::Sigmoid, arg(0)));
      // cy = (f * cx).add_(i * g); hy = o * cy.tanh() [; hy = hy @ w_hr.t()]
      TensorId fc = block("fc"), ig = block("ig"), cy = block("cy"), tc = block("tanh_cy");
      c.elementwise({f, r.c}, fc, mul(arg(0), arg(1)));
      c.elementwise({i, g}, ig, mul(arg(0), arg(1)));
      c.elementwise({fc, ig}, cy, add(arg(0), arg(1)));
      c.elementwise({cy}, tc, un(ExprOp::Tanh, arg(0)));
      TensorId hy = block("hy");
      c.elementwise({o, tc}, hy, mul(arg(0), arg(1)));
      if (proj) {
        TensorId hp = c.temp("hy_proj", {B, P}, dt);
        mm_t(c, hy, r.w_hr, hp);
        hy = hp;
      }
      r.h_next = hy;
      r.c_next = cy;
      break;
    }
    case Cell::Gru: {
      // r = hg_r.add_(x_r).sigmoid_(); z = hg_z.add_(x_z).sigmoid_();
      // n = x_n.add(hg_n.mul_(r)).tanh_(); hy = (h - n).mul_(z).add_(n)
      TensorId ra = block("r_pre"), rg = block("resetgate"), za = block("z_pre"),
               zg = block("inputgate"), rn = block("hn_r"), na = block("n_pre"), ng = block("newgate");
      blocks(c, {{hg, 0}, {r.x, 0}}, ra, add(arg(0), arg(1)));
      blocks(c, {{ra, 0}}, rg, un(ExprOp::Sigmoid, arg(0)));
      blocks(c, {{hg, H}, {r.x, H}}, za, add(arg(0), arg(1)));
      blocks(c, {{za, 0}}, zg, un(ExprOp::Sigmoid, arg(0)));
      blocks(c, {{hg, 2 * H}, {rg, 0}}, rn, mul(arg(0), arg(1)));
      blocks(c, {{r.x, 2 * H}, {rn, 0}}, na, add(arg(0), arg(1)));
      blocks(c, {{na, 0}}, ng, un(ExprOp::Tanh, arg(0)));
      TensorId d = block("h_minus_n"), e = block("times_z"), hy = block("hy");
      c.elementwise({r.h, ng}, d, sub(arg(0), arg(1)));
      c.elementwise({d, zg}, e, mul(arg(0), arg(1)));
      c.elementwise({e, ng}, hy, add(arg(0), arg(1)));
      r.h_next = hy;
      break;
    }
    default: {
      // nonlinearity(linear_hh(h).add_(x_t))
      TensorId pre = block("pre");
      c.elementwise({hg, r.x}, pre, add(arg(0), arg(1)));
      TensorId hy = block("hy");
      c.elementwise({pre}, hy, un(kind == Cell::RnnTanh ? ExprOp::Tanh : ExprOp::Relu, arg(0)));
      r.h_next = hy;
    }
  }
  c.mark_output(r.h_next);
  if (kind == Cell::Lstm) c.mark_output(r.c_next);
  c.commit();
  return r;
}

bool row_major(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& strides) {
  if (strides.size() != shape.size()) return true;  // no strides recorded: a dense tensor
  std::int64_t want = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && strides[d] != want) return false;
    want *= shape[d];
  }
  return true;
}

void lower_rnn(Context& c, Cell kind) {
  const std::int64_t G = gate_count(kind);
  const std::int64_t in_id = c.trace_id("input");
  const auto& xs = c.shape(in_id);
  if (xs.size() != 3) throw Unsupported("a recurrent layer over an unbatched (2-D) input");
  const bool batch_first = c.bool_arg("batch_first", false);
  const bool bidir = c.bool_arg("bidirectional", false);
  const bool bias = c.bool_arg("has_biases", true);
  const std::int64_t L = c.int_arg("num_layers", 1), D = bidir ? 2 : 1;
  if (c.bool_arg("train", false) && c.num_arg("dropout", 0) != 0 && L > 1)
    throw Unsupported("dropout between recurrent layers in training mode");
  const std::int64_t T = batch_first ? xs[1] : xs[0], B = batch_first ? xs[0] : xs[1];
  std::vector<std::int64_t> hx_ids =
      kind == Cell::Lstm ? c.trace_ids("hx") : std::vector<std::int64_t>{c.trace_id("hx")};
  if (kind == Cell::Lstm && hx_ids.size() != 2) throw Unsupported("lstm needs hx = (h0, c0)");
  const std::vector<std::int64_t> params = c.trace_ids("params");
  const std::int64_t per = 2 + (bias ? 2 : 0);
  const bool proj = kind == Cell::Lstm &&
                    static_cast<std::int64_t>(params.size()) == L * D * (per + 1);
  if (static_cast<std::int64_t>(params.size()) != L * D * (per + (proj ? 1 : 0)))
    throw Unsupported(fmt::format("{} weights for {} layers and {} directions", params.size(), L, D));
  const std::int64_t H = c.shape(params[0])[0] / G;
  const std::int64_t P = proj ? c.shape(params[per])[0] : H;
  const ir::DType dt = c.t(c.use(in_id)).dtype;
  if (T < 1 || B < 1) throw Unsupported("an empty sequence or batch");

  // The state per layer and direction: hx.unbind(0) (a slice and a view, free).
  auto state = [&](std::int64_t trace_id, std::int64_t k) {
    TensorId all = c.materialize(c.use(trace_id));
    std::vector<std::int64_t> one = c.t(all).shape;
    one[0] = 1;
    TensorId s = c.temp("slice", one, dt);
    slice_into(c, all, s, 0, k, k + 1, 1);
    TensorId v = c.temp("hx", {one[1], one[2]}, dt);
    c.move(MoveKind::View, {s}, v);
    return v;
  };

  // Layer 0's input as (T, B, I): torch's at::linear folds a contiguous input into one
  // addmm; a non-contiguous one (batch_first's transpose) is copied first by matmul's
  // reshape, once per direction (each direction's linear_ih copies it again).
  TensorId x = c.use(in_id);
  bool copy_input = false;
  {
    const auto& st = c.tt(in_id).strides;
    std::vector<std::int64_t> shape{T, B, xs[2]}, strides;
    if (st.size() == 3) strides = batch_first ? std::vector<std::int64_t>{st[1], st[0], st[2]} : st;
    copy_input = c.is_alias(x) || !row_major(shape, strides) || !row_major(xs, st);
    if (!copy_input && batch_first) {
      TensorId v = c.temp("input_tb", shape, dt);
      c.move(MoveKind::View, {x}, v);
      x = v;
    }
  }
  auto input_copy = [&](TensorId in) {
    TensorId xc = c.temp("input_copy", {T, B, xs[2]}, dt);
    Space s;
    AffineExpr t = ix(s.add("t", T)), b = ix(s.add("b", B)), i = ix(s.add("i", xs[2]));
    c.einsum({in}, xc, std::move(s),
             {batch_first ? std::vector<AffineExpr>{b, t, i} : std::vector<AffineExpr>{t, b, i}},
             {t, b, i}, arg(0), Reduce::None);
    return xc;
  };

  std::vector<TensorId> h_last, c_last;
  for (std::int64_t l = 0; l < L; ++l) {
    const std::int64_t I = l == 0 ? xs[2] : c.t(x).shape[2];
    std::vector<TensorId> outs;
    for (std::int64_t d = 0; d < D; ++d) {
      const std::int64_t base = (l * D + d) * (per + (proj ? 1 : 0));
      Layer w;
      w.w_ih = c.use(params[base]);
      w.w_hh = c.use(params[base + 1]);
      if (bias) w.b_ih = c.use(params[base + 2]), w.b_hh = c.use(params[base + 3]);
      if (proj) w.w_hr = c.use(params[base + per]);
      // linear_ih over the whole sequence: view (T*B, I), addmm, view (T, B, G*H)
      TensorId x2 = c.temp("input_rows", {T * B, I}, dt);
      c.move(MoveKind::View, {l == 0 && copy_input ? input_copy(x) : x}, x2);
      TensorId pre2 = c.temp("igates_rows", {T * B, G * H}, dt);
      linear(c, x2, w.w_ih, w.b_ih, pre2);
      TensorId pre = c.temp("igates", {T, B, G * H}, dt);
      c.move(MoveKind::View, {pre2}, pre);

      Body body = build_body(c, kind, B, H, P, bias, proj, dt);
      ir::RepeatOp rep;
      rep.trips = T;
      rep.reverse = d == 1;
      rep.body = body.graph;
      std::vector<TensorId> ins{pre, state(hx_ids[0], l * D + d)};
      rep.inputs.push_back({ir::LoopInput::Sliced, body.x, 0, {}});
      rep.inputs.push_back({ir::LoopInput::Carried, body.h, 0, body.h_next});
      if (kind == Cell::Lstm) {
        ins.push_back(state(hx_ids[1], l * D + d));
        rep.inputs.push_back({ir::LoopInput::Carried, body.c, 0, body.c_next});
      }
      ins.push_back(w.w_hh);
      rep.inputs.push_back({ir::LoopInput::Invariant, body.w_hh, 0, {}});
      if (bias) {
        ins.push_back(*w.b_hh);
        rep.inputs.push_back({ir::LoopInput::Invariant, body.b_hh, 0, {}});
      }
      if (proj) {
        ins.push_back(w.w_hr);
        rep.inputs.push_back({ir::LoopInput::Invariant, body.w_hr, 0, {}});
      }
      TensorId ys = c.temp(d == 1 ? "outputs_reverse" : "outputs", {T, B, P}, dt);
      TensorId hT = c.temp("h_n", {B, P}, dt);
      std::vector<TensorId> routs{ys, hT};
      rep.outputs.push_back({ir::LoopOutput::Stacked, body.h_next, 0});
      rep.outputs.push_back({ir::LoopOutput::Last, body.h_next, 0});
      if (kind == Cell::Lstm) {
        TensorId cT = c.temp("c_n", {B, H}, dt);
        routs.push_back(cT);
        rep.outputs.push_back({ir::LoopOutput::Last, body.c_next, 0});
        c_last.push_back(cT);
      }
      c.repeat(std::move(ins), std::move(routs), std::move(rep));
      outs.push_back(ys);
      h_last.push_back(hT);
    }
    if (D == 1) {
      x = outs[0];
    } else {  // at::cat({forward, backward}, -1)
      x = c.temp("layer_output", {T, B, D * P}, dt);
      c.move(MoveKind::Concat, outs, x, {{"axis", std::int64_t{2}}});
    }
  }

  // output: (T, B, D*P), or its transpose (a free view) with batch_first
  if (!batch_first) {
    c.move(MoveKind::View, {x}, c.def(0));
  } else {
    Context::Strided s;
    s.strides = {D * P, B * D * P, 1};
    c.alias_output(0, x, std::move(s));
  }
  // h_n (and c_n): at::stack of the final states
  auto stack = [&](const std::vector<TensorId>& parts, std::size_t k) {
    if (!c.out_id(k)) return;
    std::vector<TensorId> ins;
    for (TensorId t : parts) {
      std::vector<std::int64_t> shape = c.t(t).shape;
      shape.insert(shape.begin(), 1);
      TensorId v = c.temp("unsqueezed", shape, dt);
      c.move(MoveKind::View, {t}, v);
      ins.push_back(v);
    }
    c.move(MoveKind::Concat, ins, c.def(k), {{"axis", std::int64_t{0}}});
  };
  stack(h_last, 1);
  if (kind == Cell::Lstm) stack(c_last, 2);
}

}  // namespace

void register_rnn_ops(const Register& reg) {
  reg("aten::lstm.input", [](Context& c) { lower_rnn(c, Cell::Lstm); });
  reg("aten::gru.input", [](Context& c) { lower_rnn(c, Cell::Gru); });
  reg("aten::rnn_tanh.input", [](Context& c) { lower_rnn(c, Cell::RnnTanh); });
  reg("aten::rnn_relu.input", [](Context& c) { lower_rnn(c, Cell::RnnRelu); });
}

}  // namespace solar::lower::detail
