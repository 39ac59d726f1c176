// A dialect's op table: one lowering function per framework op name, built from the
// registration hooks of its families (a name registered twice is a bug found when the table
// is built: InternalError naming the op and both registrants), and the lowering of a trace
// with one.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "solar/lower/aten.h"
#include "solar/lower/optrace.h"

namespace solar::lower::detail {

class Context;

// One table entry: lowers the current op of the Context (throws Unsupported to leave it
// unanalyzed).
using Fn = std::function<void(Context&)>;
using Register = std::function<void(std::string_view, Fn)>;
// Keys are the registered names, which must outlive the table (string literals).
using Table = std::unordered_map<std::string_view, Fn>;

// Collects the entries of a dialect's families.
class TableBuilder {
 public:
  explicit TableBuilder(std::string_view dialect) : dialect_(dialect) {}

  // Runs `hook` with a Register that adds each entry under `registrant` (the family's file);
  // throws InternalError when an op name is already in the table.
  void add(std::string_view registrant, const std::function<void(const Register&)>& hook);

  Table take() { return std::move(table_); }

 private:
  std::string dialect_;
  Table table_;
  std::unordered_map<std::string_view, std::string> registrant_;  // op name -> registrant
};

// Lowers every op of `trace` with `table` (the dialect's; `dialect` names it in messages):
// an op the table lacks or cannot model becomes `unanalyzed` with the reason (or throws
// Unsupported with options.strict). Verifies the graph and maps graph tensors to trace ids.
LowerResult lower_with_table(const OpTrace& trace, const LowerOptions& options,
                             const Table& table, std::string_view dialect);

// Adds the masks of lower/masks.h to a lowered graph (aten and jax: the program's own masks;
// the loop language's nests already say which points they run) and stops comparing the
// tensors whose values it changed at points nothing reads. `trace`: the values of constant
// tensors its frontend read (TraceBand) seed the facts.
void recognize_masks_in(LowerResult& r, const OpTrace* trace = nullptr);

}  // namespace solar::lower::detail
