// The module tree's builder over any grouping of the ops (modules.cc), for the framework
// level's kernels (framework.cc): a path per op whose dots nest the groups.
#pragma once

#include <string>
#include <vector>

#include "solar/report/modules.h"

namespace solar::report::detail {

// The tree of r's live ops grouped by `path_by_op` (indexed by op id; "" the root), each
// node's boundary bytes and levels computed as module_tree computes a module's, except that a
// group's fused time is its own (not capped at its parent's).
ModuleNode group_tree(const Report& r, const std::vector<std::string>& path_by_op);

}  // namespace solar::report::detail
