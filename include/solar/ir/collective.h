// What every pass needs of a collective op (graph.h, CollectiveOp): the shape its result
// has, the verifier's rules, and the attributes of its text form (docs/ir-text.md,
// "Collectives").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "solar/ir/graph.h"
#include "solar/ir/shape.h"

namespace solar::ir {

// The shape of the result of `c` on an input of shape `in` (graph.h: all_gather multiplies
// `axis` by the group's size, reduce_scatter divides it, all_to_all divides `axis` and then
// multiplies `concat_axis`; the others keep it), or why there is none (an axis out of range,
// an extent the group's size does not divide). Not for recv, which has no input.
struct CollectiveShape {
  Shape shape;
  std::string why_not;  // non-empty when there is no shape
};
CollectiveShape collective_output_shape(const CollectiveOp& c, const Shape& in);

// Why `op` (a collective op of `g`) is malformed, or nullopt: the number of inputs (recv none,
// the others one) and outputs (one), the group (size >= 1, a pair for send and recv,
// ranks_per_domain dividing the size, torus extents multiplying to it), the reduction only on
// all_reduce and reduce_scatter, `peer` >= 0, `root` a rank of the group, the result's dtype
// the input's and its shape collective_output_shape's. Messages name what is wrong and the
// numbers involved.
std::optional<std::string> why_not_collective(const Graph& g, const Op& op);

// The attributes of the text form's {...} (everything but the kind and the reduction), in
// the order the printer writes them: size (not for send and recv), group, ranks_per_domain,
// torus_extent, then the kind's own (axis; split_axis, concat_axis; peer; root). Values that
// say nothing (an empty name, an unknown layout) are left out.
std::vector<std::pair<std::string, AttrValue>> collective_text_attrs(const CollectiveOp& c);

// A collective of `kind` from the text form's attributes (`reduction` given for the kinds that
// reduce). Returns the reason when an attribute is unknown for the kind, of the wrong type, or
// missing (size, except for send and recv; peer; root defaults to 0, axes to 0).
struct CollectiveFromAttrs {
  CollectiveOp op;
  std::string why_not;  // non-empty on error
};
CollectiveFromAttrs collective_from_attrs(CollectiveKind kind,
                                          std::optional<CollectiveReduction> reduction,
                                          const Attrs& attrs);

}  // namespace solar::ir
