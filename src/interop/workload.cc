// build_workload: the graph's live einsums with root-tensor projections and target-safe names.
#include "solar/interop/workload.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "solar/cost/work.h"
#include "solar/ir/attrs.h"
#include "solar/ir/json.h"
#include "solar/ir/shape.h"
#include "solar/util/errors.h"

namespace solar::interop {
namespace {

using ir::AffineExpr;
using ir::AffineTerm;
using i128 = __int128;

// Words the targets give a meaning of their own: ISL keywords (projections and iteration
// spaces are ISL), AccelForge's set-expression names and rename targets, its reserved
// Einsum name, Python keywords its expressions are evaluated with.
const std::set<std::string, std::less<>>& reserved_words() {
  static const std::set<std::string, std::less<>> words = {
      // ISL
      "and", "or", "not", "implies", "exists", "mod", "floor", "ceil", "min", "max", "infty",
      "NaN", "true", "false", "rat", "sum", "div",
      // AccelForge set expressions, renames and reserved names
      "All", "Tensors", "Nothing", "Inputs", "Outputs", "Intermediates", "Shared",
      "Persistent", "Above", "Total", "input", "output", "weight", "Einsum",
      // Python keywords
      "if", "else", "in", "is", "for", "lambda", "None", "True", "False", "len"};
  return words;
}

bool reserved(std::string_view s) { return reserved_words().contains(s); }

// Takes `base` if free, else base_1, base_2, ... (the first free one).
std::string take_unique(std::string base, std::set<std::string, std::less<>>& taken) {
  std::string name = base;
  for (int k = 1; taken.contains(name); ++k) name = fmt::format("{}_{}", base, k);
  taken.insert(name);
  return name;
}

std::optional<std::int64_t> to_i64(i128 v) {
  if (v > INT64_MAX || v < INT64_MIN) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

// e * c + d, or nullopt on overflow.
std::optional<AffineExpr> scale_shift(const AffineExpr& e, std::int64_t c, std::int64_t d) {
  std::vector<AffineTerm> terms;
  for (const AffineTerm& t : e.terms()) {
    auto v = to_i64(static_cast<i128>(t.coef) * c);
    if (!v) return std::nullopt;
    terms.push_back({t.index, *v});
  }
  auto k = to_i64(static_cast<i128>(e.constant_term()) * c + d);
  if (!k) return std::nullopt;
  return AffineExpr::make(std::move(terms), *k);
}

using ir::row_major_strides;

// The row-major flat offset sum_i e_i * stride_i of an access to `shape`.
std::optional<AffineExpr> flatten(const std::vector<AffineExpr>& e,
                                  const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> strides = row_major_strides(shape);
  std::vector<AffineTerm> terms;
  i128 constant = 0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    auto scaled = scale_shift(e[i], strides[i], 0);
    if (!scaled) return std::nullopt;
    for (const AffineTerm& t : scaled->terms()) terms.push_back(t);
    constant += scaled->constant_term();
  }
  auto k = to_i64(constant);
  if (!k) return std::nullopt;
  return AffineExpr::make(std::move(terms), *k);
}

// The coordinates of `shape` whose row-major offset is `flat`, as affine expressions, when
// they are affine: each term goes to the outermost dimension whose stride divides its
// coefficient, and the split is exact when every coordinate stays inside its dimension over
// the whole box (then it is the unique mixed-radix representation of the offset).
std::optional<std::vector<AffineExpr>> unflatten(const AffineExpr& flat,
                                                 const std::vector<std::int64_t>& shape,
                                                 const std::vector<std::int64_t>& extents) {
  std::vector<std::int64_t> strides = row_major_strides(shape);
  std::vector<std::size_t> dims;  // dimensions of size > 1, outermost first
  for (std::size_t j = 0; j < shape.size(); ++j)
    if (shape[j] > 1) dims.push_back(j);
  std::vector<std::vector<AffineTerm>> terms(shape.size());
  for (const AffineTerm& t : flat.terms()) {
    auto it = std::find_if(dims.begin(), dims.end(),
                           [&](std::size_t j) { return t.coef % strides[j] == 0; });
    if (it == dims.end()) return std::nullopt;  // only when every dimension has size 1
    terms[*it].push_back({t.index, t.coef / strides[*it]});
  }
  std::int64_t rest = flat.constant_term();
  if (rest < 0) return std::nullopt;
  std::vector<AffineExpr> out(shape.size());
  for (std::size_t j : dims) {
    out[j] = AffineExpr::make(std::move(terms[j]), rest / strides[j]);
    rest %= strides[j];
  }
  if (rest != 0) return std::nullopt;
  for (std::size_t j = 0; j < shape.size(); ++j) {
    if (shape[j] <= 1 && !terms[j].empty()) return std::nullopt;
    if (out[j].min_value(extents) < 0 || out[j].max_value(extents) >= std::max<std::int64_t>(shape[j], 1))
      return std::nullopt;
  }
  return out;
}

// Coordinates of a right-aligned broadcast (or repeat, when `repeat`) source: a size-1
// source dimension reads 0, an equal one the view's coordinate; a true repeat (a multiple
// > 1 of a source dimension > 1) is not affine.
std::optional<std::vector<AffineExpr>> unbroadcast(const std::vector<AffineExpr>& e,
                                                   const std::vector<std::int64_t>& view,
                                                   const std::vector<std::int64_t>& src) {
  if (src.size() > view.size()) return std::nullopt;
  std::size_t offset = view.size() - src.size();
  std::vector<AffineExpr> out(src.size());
  for (std::size_t j = 0; j < src.size(); ++j) {
    if (src[j] == 1) continue;  // the constant 0
    if (view[j + offset] != src[j]) return std::nullopt;
    out[j] = e[j + offset];
  }
  return out;
}

std::int64_t product(const std::vector<std::int64_t>& shape) {
  i128 p = 1;
  for (std::int64_t d : shape) p *= d;
  return p > INT64_MAX ? -1 : static_cast<std::int64_t>(p);
}

using ir::find_int_list;

// The access to the input of movement op `op` that reading its output at `e` amounts to,
// when that is affine; otherwise nullopt (and `why` says so for the notes).
std::optional<std::vector<AffineExpr>> through(const ir::Graph& g, const ir::Op& op,
                                               const std::vector<AffineExpr>& e,
                                               const std::vector<std::int64_t>& extents) {
  const ir::MoveOp& m = op.move();
  const ir::Tensor& in = g.tensor(op.inputs[0]);
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  switch (m.kind) {
    case ir::MoveKind::Permute: {
      const auto* perm = find_int_list(m.attrs, "perm");
      if (!perm || perm->size() != e.size()) return std::nullopt;
      std::vector<AffineExpr> r(e.size());
      for (std::size_t i = 0; i < e.size(); ++i) r[(*perm)[i]] = e[i];
      return r;
    }
    case ir::MoveKind::Slice: {
      const auto* starts = find_int_list(m.attrs, "starts");
      const auto* steps = find_int_list(m.attrs, "steps");
      if (!starts || starts->size() != e.size()) return std::nullopt;
      std::vector<AffineExpr> r;
      for (std::size_t i = 0; i < e.size(); ++i) {
        auto v = scale_shift(e[i], steps ? (*steps)[i] : 1, (*starts)[i]);
        if (!v) return std::nullopt;
        r.push_back(*v);
      }
      return r;
    }
    case ir::MoveKind::View:
    case ir::MoveKind::Copy: {
      if (in.dtype != out.dtype) return std::nullopt;  // a reinterpreting view
      std::int64_t ni = product(in.shape), no = product(out.shape);
      if (ni < 0 || no < 0) return std::nullopt;
      if (ni != no) return unbroadcast(e, out.shape, in.shape);
      if (in.shape == out.shape) return e;
      auto flat = flatten(e, out.shape);
      if (!flat) return std::nullopt;
      return unflatten(*flat, in.shape, extents);
    }
    case ir::MoveKind::Concat: case ir::MoveKind::Pad: case ir::MoveKind::Gather:
    case ir::MoveKind::Scatter: case ir::MoveKind::Cast:
      return std::nullopt;
  }
  return std::nullopt;
}

bool foldable_kind(ir::MoveKind k) {
  switch (k) {
    case ir::MoveKind::View: case ir::MoveKind::Copy: case ir::MoveKind::Permute:
    case ir::MoveKind::Slice:
      return true;
    case ir::MoveKind::Concat: case ir::MoveKind::Pad: case ir::MoveKind::Gather:
    case ir::MoveKind::Scatter: case ir::MoveKind::Cast:
      return false;
  }
  return false;
}

std::string move_reason(const ir::Graph& g, const ir::Op& op) {
  switch (op.move().kind) {
    case ir::MoveKind::View: case ir::MoveKind::Copy: case ir::MoveKind::Permute:
    case ir::MoveKind::Slice:
      return "a relabeling whose composition with its consumers' subscripts is not affine "
             "(or it feeds no exported einsum); its output is a workload input";
    case ir::MoveKind::Cast:
      return "a dtype conversion: no einsum of the targets' kind; the cast tensor is a "
             "workload input at its own width";
    case ir::MoveKind::Concat:
      return "a concatenation writes one tensor from several: not one affine einsum; its "
             "output is a workload input";
    case ir::MoveKind::Pad:
      return "a pad materializes a larger tensor: its output is a workload input";
    case ir::MoveKind::Gather: case ir::MoveKind::Scatter:
      return "a data-dependent index (gather/scatter) has no affine projection; its output "
             "is a workload input";
  }
  (void)g;
  return "";
}

std::string rank_variable_base(std::string_view index) {
  std::string s = sanitize_identifier(index);
  s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  if (reserved(s)) s += "_";
  return s;
}

}  // namespace

std::string sanitize_identifier(std::string_view name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) s = "t" + s;
  return s;
}

std::string isl_affine(const AffineExpr& e, const std::vector<std::string>& names) {
  std::string out;
  for (const AffineTerm& t : e.terms()) {
    std::int64_t c = t.coef;
    if (out.empty()) {
      if (c < 0) out += "-";
    } else {
      out += c < 0 ? " - " : " + ";
    }
    std::int64_t a = c < 0 ? -c : c;
    if (a != 1) out += fmt::format("{}*", a);
    out += names.at(static_cast<std::size_t>(t.index));
  }
  std::int64_t k = e.constant_term();
  if (out.empty()) return fmt::format("{}", k);
  if (k > 0) out += fmt::format(" + {}", k);
  if (k < 0) out += fmt::format(" - {}", static_cast<std::uint64_t>(-(k + 1)) + 1);
  return out;
}

Count Workload::total_operations() const {
  Count c;
  for (const WorkloadEinsum& e : einsums) c += e.live_points;
  return c;
}

Count Workload::total_macs() const {
  Count c;
  for (const WorkloadEinsum& e : einsums) c += e.macs;
  return c;
}

Workload build_workload(const ir::Graph& g, const cost::GraphCost& cost) {
  Workload w;
  w.graph_name = g.name;
  w.frontend = g.frontend;
  w.source = g.source;
  nlohmann::json gj = ir::graph_to_json(g);

  // Root tensors by graph id -> index into w.tensors (aliases are added per occurrence).
  std::map<std::uint32_t, int> root_index;
  std::set<std::uint32_t> folded_ops;
  std::set<std::string, std::less<>> einsum_names, rank_variables_all;
  // (tensor index, plain index name per dim) of the access that first names a tensor.
  std::map<int, std::vector<std::string>> first_labels;

  auto add_tensor = [&](ir::TensorId id, const std::string& alias_of) {
    const ir::Tensor& t = g.tensor(id);
    WorkloadTensor wt;
    wt.id = id;
    wt.solar_name = t.name;
    wt.shape = t.shape;
    wt.dtype = t.dtype;
    wt.alias_of = alias_of;
    w.tensors.push_back(std::move(wt));
    return static_cast<int>(w.tensors.size()) - 1;
  };

  for (const ir::Op& op : g.ops()) {
    const cost::Work& work = cost.per_op.at(op.id.value);
    switch (op.kind()) {
      case ir::OpKind::Einsum:
        break;
      case ir::OpKind::Move:
        continue;  // folded or left out, decided below once every consumer is known
      case ir::OpKind::Opaque:
        w.left_out.push_back({op.name, "opaque",
                              fmt::format("opaque '{}' has no einsum form ({}); its outputs are "
                                          "workload inputs",
                                          op.opaque().function, op.opaque().assumption)});
        continue;
      case ir::OpKind::Unanalyzed:
        w.left_out.push_back({op.name, "unanalyzed",
                              fmt::format("'{}' is not analyzed ({}); its outputs are workload "
                                          "inputs",
                                          op.unanalyzed().framework_op, op.unanalyzed().reason)});
        continue;
      case ir::OpKind::Collective:
        // A workload is one device's loop nests; a collective runs on links between devices,
        // which neither AccelForge nor Timeloop models.
        w.left_out.push_back({op.name, "collective",
                              fmt::format("{} over {} ranks moves data between devices, which "
                                          "a one-device workload does not model; its outputs "
                                          "are workload inputs",
                                          ir::collective_kind_name(op.collective().kind),
                                          op.collective().group.size)});
        continue;
      case ir::OpKind::Repeat:
        w.left_out.push_back({op.name, "repeat",
                              fmt::format("a loop of {} iterations over a body of {} ops has no "
                                          "single einsum form; its outputs are workload inputs",
                                          op.repeat().trips, op.repeat().body->ops().size())});
        continue;
    }
    if (work.dead) {
      w.left_out.push_back({op.name, "einsum",
                            "dead: no graph output depends on it, so no implementation runs it "
                            "(Solar's totals leave it out too)"});
      continue;
    }
    const ir::EinsumOp& e = op.einsum();
    if (std::any_of(e.indices.begin(), e.indices.end(),
                    [](const ir::IndexDim& d) { return d.extent == 0; })) {
      w.left_out.push_back({op.name, "einsum",
                            "an empty iteration space (an index of extent 0): no operation; "
                            "its output, written once, is a workload input"});
      continue;
    }
    WorkloadEinsum we;
    we.op = op.id;
    we.solar_name = op.name;
    we.name = take_unique(sanitize_identifier(op.name), einsum_names);
    we.indices = e.indices;
    we.mask = e.mask;
    std::set<std::string, std::less<>> local;
    for (const ir::IndexDim& d : e.indices) {
      we.rank_variables.push_back(take_unique(rank_variable_base(d.name), local));
      rank_variables_all.insert(we.rank_variables.back());
    }
    std::vector<std::int64_t> extents = e.extents();
    we.box_points = Count(1);
    for (std::int64_t x : extents) we.box_points *= Count::from_signed(x);
    we.counted = work.analyzed;
    we.live_points = work.analyzed ? work.live_points : we.box_points;
    we.macs = work.analyzed ? work.total_macs() : Count();
    we.contraction = work.contraction;
    const nlohmann::json& oj = gj.at("ops").at(op.id.value);
    we.combine = oj.at("combine").get<std::string>();
    we.reduce = oj.at("reduce").get<std::string>();
    we.framework_op = op.origin.op;

    std::map<int, int> seen;  // root index -> accesses so far in this einsum
    auto add_access = [&](ir::TensorId id, std::vector<AffineExpr> proj,
                          std::optional<double> pad, bool output,
                          std::vector<std::string> folded) {
      int root;
      if (auto it = root_index.find(id.value); it != root_index.end()) {
        root = it->second;
      } else {
        root = add_tensor(id, "");
        root_index[id.value] = root;
      }
      int index = root;
      int k = seen[root]++;
      if (k > 0) index = add_tensor(id, std::to_string(root));  // resolved to a name below
      WorkloadAccess a;
      a.tensor = index;
      a.pad = pad;
      a.output = output;
      a.folded = std::move(folded);
      ir::Operand folded_operand{proj, pad};
      a.footprint = cost::operand_footprint(e, folded_operand, g.tensor(id));
      a.projection = std::move(proj);
      if (!first_labels.contains(index)) {
        std::vector<std::string> labels;
        for (const AffineExpr& x : a.projection) {
          auto plain = x.as_plain_index();
          labels.push_back(plain ? e.indices[*plain].name : "");
        }
        first_labels[index] = std::move(labels);
      }
      we.accesses.push_back(std::move(a));
      if (k > 0) w.tensors[index].alias_of = fmt::format("#{}#{}", root, k);
    };

    for (std::size_t i = 0; i < e.operands.size(); ++i) {
      const ir::Operand& operand = e.operands[i];
      ir::TensorId t = op.inputs[i];
      std::vector<AffineExpr> proj = operand.subscript;
      std::vector<std::string> folded;
      // Follow layout-only movement ops back to the tensor an einsum (or the caller) made.
      // A padded read stops at once: out-of-range reads of a view are not reads of its source.
      while (!operand.pad) {
        auto producer = g.producer(t);
        if (!producer) break;
        const ir::Op& p = g.op(*producer);
        if (p.kind() != ir::OpKind::Move || !foldable_kind(p.move().kind)) break;
        auto next = through(g, p, proj, extents);
        if (!next) break;
        proj = std::move(*next);
        t = p.inputs[0];
        folded.push_back(p.name);
        folded_ops.insert(p.id.value);
      }
      add_access(t, std::move(proj), operand.pad, false, std::move(folded));
    }
    add_access(op.outputs[0], e.output, std::nullopt, true, {});
    w.einsums.push_back(std::move(we));
  }
  if (w.einsums.empty())
    throw UserError(UserError::Kind::InvalidGraph,
                    fmt::format("graph '{}' has no live einsum to export (only data movement, "
                                "opaque or unanalyzed ops, or dead or empty einsums)",
                                g.name),
                    Origin{g.source, 0, ""});

  for (const ir::Op& op : g.ops()) {
    if (op.kind() != ir::OpKind::Move) continue;
    if (folded_ops.contains(op.id.value)) {
      w.folded.push_back(op.name);
      // A relabeling some consumer could not see through still leaves a workload input.
      bool stays = false;
      for (const WorkloadTensor& t : w.tensors)
        if (t.id == op.outputs[0]) stays = true;
      if (!stays) continue;
    }
    w.left_out.push_back({op.name, fmt::format("move:{}", ir::move_kind_name(op.move().kind)),
                          move_reason(g, op)});
  }

  // Names: tensors avoid every rank variable (AccelForge puts tensors and rank variables in
  // one symbol table) and the targets' reserved words; aliases are the root's name + __k.
  std::set<std::string, std::less<>> tensor_names;
  for (WorkloadTensor& t : w.tensors) {
    if (!t.alias_of.empty()) continue;
    std::string base = sanitize_identifier(t.solar_name);
    if (reserved(base) || rank_variables_all.contains(base)) base += "_t";
    t.name = take_unique(base, tensor_names);
  }
  for (WorkloadTensor& t : w.tensors) {
    if (t.alias_of.empty()) continue;
    // alias_of holds "#root#k" until the root is named.
    std::size_t hash = t.alias_of.find('#', 1);
    int root = std::stoi(t.alias_of.substr(1, hash - 1));
    std::string k = t.alias_of.substr(hash + 1);
    t.alias_of = w.tensors[root].name;
    t.name = take_unique(fmt::format("{}__{}", t.alias_of, k), tensor_names);
  }
  for (std::size_t i = 0; i < w.tensors.size(); ++i) {
    WorkloadTensor& t = w.tensors[i];
    const ir::Tensor& gt = g.tensor(t.id);
    std::string prefix = t.name;
    prefix[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(prefix[0])));
    std::set<std::string, std::less<>> labels;
    const std::vector<std::string>& first = first_labels[static_cast<int>(i)];
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      std::string label;
      if (gt.dim_names.size() == t.shape.size()) label = gt.dim_names[d];
      else if (d < first.size()) label = first[d];
      if (label.empty()) label = std::to_string(d);
      for (char& c : label)
        c = std::isalnum(static_cast<unsigned char>(c))
                ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                : '_';
      if (labels.contains(label)) label = fmt::format("{}_{}", label, d);
      labels.insert(label);
      t.ranks.push_back(fmt::format("{}_{}", prefix, label));
    }
  }
  return w;
}

}  // namespace solar::interop
