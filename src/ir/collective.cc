// Collective ops: the result's shape, the verifier's rules and the text form's attributes.
#include "solar/ir/collective.h"

#include <fmt/format.h>

#include <algorithm>

namespace solar::ir {

namespace {

// "axis 2 of a rank-2 input" when out of range.
std::string axis_problem(std::string_view what, std::int64_t axis, std::size_t rank) {
  if (axis >= 0 && static_cast<std::size_t>(axis) < rank) return "";
  return fmt::format("{} {} is out of range for a rank-{} input (0 to {})", what, axis, rank,
                     static_cast<std::int64_t>(rank) - 1);
}

std::string kind_over(const CollectiveOp& c) {
  return fmt::format("{} over {} ranks", collective_kind_name(c.kind), c.group.size);
}

// The kind's own attributes: which text keys it takes.
std::vector<std::string_view> own_keys(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllGather: case CollectiveKind::ReduceScatter: return {"axis"};
    case CollectiveKind::AllToAll: return {"split_axis", "concat_axis"};
    case CollectiveKind::Send: case CollectiveKind::Recv: return {"peer"};
    case CollectiveKind::Broadcast: return {"root"};
    case CollectiveKind::AllReduce: return {};
  }
  return {};
}

bool is_pair(CollectiveKind k) { return k == CollectiveKind::Send || k == CollectiveKind::Recv; }

}  // namespace

CollectiveShape collective_output_shape(const CollectiveOp& c, const Shape& in) {
  CollectiveShape r{in, ""};
  const std::int64_t n = c.group.size;
  switch (c.kind) {
    case CollectiveKind::AllReduce: case CollectiveKind::Send: case CollectiveKind::Recv:
    case CollectiveKind::Broadcast:
      return r;
    case CollectiveKind::AllGather:
      if ((r.why_not = axis_problem("axis", c.axis, in.size())).empty()) r.shape[c.axis] *= n;
      return r;
    case CollectiveKind::ReduceScatter:
      if (!(r.why_not = axis_problem("axis", c.axis, in.size())).empty()) return r;
      if (in[c.axis] % n != 0) {
        r.why_not = fmt::format("the group's {} ranks do not divide axis {} of the input {} "
                                "(extent {}) into equal blocks",
                                n, c.axis, shape_str(in), in[c.axis]);
        return r;
      }
      r.shape[c.axis] /= n;
      return r;
    case CollectiveKind::AllToAll:
      if (!(r.why_not = axis_problem("split_axis", c.axis, in.size())).empty()) return r;
      if (!(r.why_not = axis_problem("concat_axis", c.concat_axis, in.size())).empty()) return r;
      if (in[c.axis] % n != 0) {
        r.why_not = fmt::format("the group's {} ranks do not divide split_axis {} of the input "
                                "{} (extent {}) into equal blocks",
                                n, c.axis, shape_str(in), in[c.axis]);
        return r;
      }
      r.shape[c.axis] /= n;
      r.shape[c.concat_axis] *= n;
      return r;
  }
  return r;
}

std::optional<std::string> why_not_collective(const Graph& g, const Op& op) {
  const CollectiveOp& c = op.collective();
  const std::string_view kind = collective_kind_name(c.kind);
  const std::size_t inputs = c.kind == CollectiveKind::Recv ? 0 : 1;
  if (op.inputs.size() != inputs)
    return fmt::format("{} takes {} input{}, not {}", kind, inputs, inputs == 1 ? "" : "s",
                       op.inputs.size());
  if (op.outputs.size() != 1)
    return fmt::format("{} has one result, not {}", kind, op.outputs.size());
  const CollectiveGroup& grp = c.group;
  if (grp.size < 1) return fmt::format("group size {} is not a number of ranks (>= 1)", grp.size);
  if (is_pair(c.kind) && grp.size != 2)
    return fmt::format("{} runs between a pair of ranks: its group size is 2, not {}", kind,
                       grp.size);
  if (grp.ranks_per_domain < 0 || grp.ranks_per_domain > grp.size ||
      (grp.ranks_per_domain > 0 && grp.size % grp.ranks_per_domain != 0))
    return fmt::format("ranks_per_domain {} does not divide the group's {} ranks",
                       grp.ranks_per_domain, grp.size);
  if (!grp.torus_extent.empty()) {
    std::int64_t product = 1;
    for (std::int64_t e : grp.torus_extent) {
      if (e < 1)
        return fmt::format("torus_extent {} has an extent below 1", shape_str(grp.torus_extent));
      product *= e;
      if (product > grp.size) break;
    }
    if (grp.ranks_per_domain == 0)
      return fmt::format("torus_extent {} needs ranks_per_domain (the ranks it lays out in one "
                         "domain)",
                         shape_str(grp.torus_extent));
    if (product != grp.ranks_per_domain)
      return fmt::format("torus_extent {} multiplies to {}, not ranks_per_domain {}",
                         shape_str(grp.torus_extent), product, grp.ranks_per_domain);
  }
  if (!grp.replica_groups.empty()) {
    if (is_pair(c.kind)) return fmt::format("{} names its peer, not replica_groups", kind);
    const auto n = static_cast<std::int64_t>(grp.replica_groups.size());
    if (n % grp.size != 0)
      return fmt::format("replica_groups lists {} ranks, not groups of the group's {} ranks", n,
                         grp.size);
    std::vector<std::int64_t> sorted = grp.replica_groups;
    std::sort(sorted.begin(), sorted.end());
    for (std::int64_t k = 0; k < n; ++k)
      if (sorted[k] < 0 || (k > 0 && sorted[k] == sorted[k - 1]))
        return fmt::format("replica_groups {} lists a rank below 0 or twice",
                           shape_str(grp.replica_groups));
  }
  if (!collective_reduces(c.kind) && c.reduction != CollectiveReduction::Sum)
    return fmt::format("{} does not reduce, so it takes no reduction ({})", kind,
                       collective_reduction_name(c.reduction));
  if (is_pair(c.kind) && c.peer < 0)
    return fmt::format("peer {} is not a rank (>= 0)", c.peer);
  if (c.kind == CollectiveKind::Broadcast && (c.root < 0 || c.root >= grp.size))
    return fmt::format("root {} is not a rank of the group (0 to {})", c.root, grp.size - 1);
  const Tensor& out = g.tensor(op.outputs[0]);
  if (c.kind == CollectiveKind::Recv) return std::nullopt;
  const Tensor& in = g.tensor(op.inputs[0]);
  if (out.dtype != in.dtype)
    return fmt::format("result '{}' is {} but the input '{}' is {}: a collective keeps the "
                       "dtype",
                       out.name, dtype_name(out.dtype), in.name, dtype_name(in.dtype));
  CollectiveShape s = collective_output_shape(c, in.shape);
  if (!s.why_not.empty()) return s.why_not;
  if (s.shape != out.shape)
    return fmt::format("result '{}' has shape {}, but {} of '{}' {} gives {}", out.name,
                       shape_str(out.shape), kind_over(c), in.name, shape_str(in.shape),
                       shape_str(s.shape));
  return std::nullopt;
}

std::vector<std::pair<std::string, AttrValue>> collective_text_attrs(const CollectiveOp& c) {
  std::vector<std::pair<std::string, AttrValue>> out;
  if (!is_pair(c.kind)) out.emplace_back("size", c.group.size);
  if (!c.group.name.empty()) out.emplace_back("group", c.group.name);
  if (c.group.ranks_per_domain > 0) out.emplace_back("ranks_per_domain", c.group.ranks_per_domain);
  if (!c.group.torus_extent.empty()) out.emplace_back("torus_extent", c.group.torus_extent);
  if (!c.group.replica_groups.empty()) out.emplace_back("replica_groups", c.group.replica_groups);
  if (c.eager) out.emplace_back("eager", std::int64_t{1});
  switch (c.kind) {
    case CollectiveKind::AllGather: case CollectiveKind::ReduceScatter:
      out.emplace_back("axis", c.axis);
      break;
    case CollectiveKind::AllToAll:
      out.emplace_back("split_axis", c.axis);
      out.emplace_back("concat_axis", c.concat_axis);
      break;
    case CollectiveKind::Send: case CollectiveKind::Recv:
      out.emplace_back("peer", c.peer);
      break;
    case CollectiveKind::Broadcast:
      out.emplace_back("root", c.root);
      break;
    case CollectiveKind::AllReduce:
      break;
  }
  return out;
}

CollectiveFromAttrs collective_from_attrs(CollectiveKind kind,
                                          std::optional<CollectiveReduction> reduction,
                                          const Attrs& attrs) {
  CollectiveFromAttrs r;
  CollectiveOp& c = r.op;
  c.kind = kind;
  if (reduction) c.reduction = *reduction;
  if (is_pair(kind)) c.group.size = 2;
  const std::string_view name = collective_kind_name(kind);
  std::vector<std::string_view> keys = {"group", "ranks_per_domain", "torus_extent",
                                        "replica_groups", "eager"};
  if (!is_pair(kind)) keys.push_back("size");
  for (std::string_view k : own_keys(kind)) keys.push_back(k);
  auto integer = [&](const std::string& key, std::int64_t& slot) {
    if (!std::holds_alternative<std::int64_t>(attrs.at(key)))
      r.why_not = fmt::format("{} attribute '{}' must be an integer", name, key);
    else
      slot = std::get<std::int64_t>(attrs.at(key));
  };
  for (const auto& [key, value] : attrs) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      r.why_not = fmt::format("{} takes no attribute '{}' (it takes: {})", name, key,
                              fmt::join(keys, ", "));
      return r;
    }
    if (key == "group") {
      if (!std::holds_alternative<std::string>(value))
        r.why_not = "attribute 'group' must be a quoted name (the mesh axis or group)";
      else
        c.group.name = std::get<std::string>(value);
    } else if (key == "torus_extent") {
      if (const auto* v = std::get_if<std::vector<std::int64_t>>(&value))
        c.group.torus_extent = *v;
      else if (const auto* i = std::get_if<std::int64_t>(&value))
        c.group.torus_extent = {*i};
      else
        r.why_not = "attribute 'torus_extent' must be an integer list";
    } else if (key == "replica_groups") {
      if (const auto* v = std::get_if<std::vector<std::int64_t>>(&value))
        c.group.replica_groups = *v;
      else
        r.why_not = "attribute 'replica_groups' must be an integer list (the groups' ranks, one "
                    "group after another)";
    } else if (key == "eager") {
      std::int64_t e = 0;
      integer(key, e);
      c.eager = e != 0;
    } else if (key == "size") {
      integer(key, c.group.size);
    } else if (key == "ranks_per_domain") {
      integer(key, c.group.ranks_per_domain);
    } else if (key == "axis" || key == "split_axis") {
      integer(key, c.axis);
    } else if (key == "concat_axis") {
      integer(key, c.concat_axis);
    } else if (key == "peer") {
      integer(key, c.peer);
    } else if (key == "root") {
      integer(key, c.root);
    }
    if (!r.why_not.empty()) return r;
  }
  if (!is_pair(kind) && !attrs.contains("size"))
    r.why_not = fmt::format("{} needs size=N, the number of ranks in its group", name);
  else if (is_pair(kind) && !attrs.contains("peer"))
    r.why_not = fmt::format("{} needs peer=R, the rank it {}", name,
                            kind == CollectiveKind::Send ? "sends to" : "receives from");
  return r;
}

}  // namespace solar::ir
