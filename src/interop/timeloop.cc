// Timeloop problem writers: the classic one-einsum problem and the LoopTree workload.
#include "solar/interop/timeloop.h"

#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common.h"
#include "solar/ir/dtype.h"
#include "solar/ir/text.h"
#include "solar/util/errors.h"

namespace solar::interop {
namespace {

using detail::comment_safe;
using detail::yaml_quote;

constexpr std::size_t kMaxDataSpaces = 5;  // Timeloop's MAX_DATA_SPACES (problem-shape.hpp)

// One letter per index (its own initial when free, upper case first), and `dummy` for the
// extent-1 dimension that constant subscripts project on, when one is needed.
std::vector<std::string> dimension_letters(const WorkloadEinsum& e, bool need_dummy,
                                           std::string* dummy) {
  std::set<char> taken;
  std::vector<std::string> out(e.indices.size());
  auto try_take = [&](char c) {
    if (!std::isalpha(static_cast<unsigned char>(c)) || taken.contains(c)) return false;
    taken.insert(c);
    return true;
  };
  std::string pool;
  for (char c = 'A'; c <= 'Z'; ++c) pool += c;
  for (char c = 'a'; c <= 'z'; ++c) pool += c;
  auto next_free = [&]() {
    for (char c : pool)
      if (try_take(c)) return std::string(1, c);
    throw Unsupported(fmt::format("einsum '{}' needs more than 52 dimensions, more than "
                                  "Timeloop's one-letter dimension names allow",
                                  e.solar_name));
  };
  // Initials first, in index order, so that m, n, k keep M, N, K.
  for (std::size_t i = 0; i < e.indices.size(); ++i) {
    char c = e.indices[i].name.empty() ? '_' : e.indices[i].name[0];
    char up = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    char low = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (try_take(up)) out[i] = std::string(1, up);
    else if (try_take(low)) out[i] = std::string(1, low);
  }
  for (std::string& s : out)
    if (s.empty()) s = next_free();
  if (need_dummy) *dummy = try_take('Z') ? "Z" : next_free();
  return out;
}

std::string coefficient_name(std::int64_t c) {
  return c < 0 ? fmt::format("CoefM{}", static_cast<std::uint64_t>(-(c + 1)) + 1)
               : fmt::format("Coef{}", c);
}

std::string int_list(const std::vector<std::int64_t>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + fmt::format("{}", v[i]);
  return out + "]";
}

// The Solar text form of an affine expression over the letters (for `# solar: mask`).
std::string text_affine(const ir::AffineExpr& e, const std::vector<std::string>& letters) {
  std::vector<ir::IndexDim> dims;
  for (const std::string& l : letters) dims.push_back({l, 1});
  return ir::print_affine(e, dims);
}

}  // namespace

std::string timeloop_problem(const Workload& w, const WorkloadEinsum& e) {
  if (e.accesses.size() > kMaxDataSpaces)
    throw Unsupported(fmt::format("einsum '{}' has {} data spaces; Timeloop's problem shape "
                                  "holds at most {} (MAX_DATA_SPACES)",
                                  e.solar_name, e.accesses.size(), kMaxDataSpaces));
  bool need_dummy = false;
  for (const WorkloadAccess& a : e.accesses)
    for (const ir::AffineExpr& x : a.projection) need_dummy |= x.is_constant();
  std::string dummy;
  std::vector<std::string> letters = dimension_letters(e, need_dummy, &dummy);

  std::set<std::int64_t> coefficients;
  for (const WorkloadAccess& a : e.accesses)
    for (const ir::AffineExpr& x : a.projection)
      for (const ir::AffineTerm& t : x.terms())
        if (t.coef != 1) coefficients.insert(t.coef);

  std::string out;
  out += comment_safe(fmt::format("# Timeloop problem (v0.4) exported by Solar: einsum '{}' of "
                                  "graph '{}'.",
                                  e.name, w.graph_name)) +
         "\n";
  out += "# " + detail::einsum_summary(w, e) + "\n";
  out += fmt::format("# Timeloop counts one multiply-accumulate per point of the instance box: "
                     "{}{}.\n",
                     e.box_points.str(),
                     e.mask.empty() ? ""
                                    : fmt::format(" (Solar's mask leaves {} live)",
                                                  e.live_points.str()));
  out += "# The `# solar:` lines say what Timeloop cannot (Solar's reader uses them).\n";
  out += comment_safe(fmt::format("# solar: op {}", e.solar_name)) + "\n";
  out += fmt::format("# solar: combine {}\n# solar: reduce {}\n", e.combine, e.reduce);
  for (const ir::AffineConstraint& c : e.mask)
    out += fmt::format("# solar: mask {} >= 0\n", text_affine(c.expr, letters));
  for (const WorkloadAccess& a : e.accesses) {
    const WorkloadTensor& t = w.tensor_of(a);
    std::vector<std::int64_t> offsets;
    for (const ir::AffineExpr& x : a.projection) offsets.push_back(x.constant_term());
    out += fmt::format("# solar: data_space {} tensor {} {}{} offset {}{}\n", t.name,
                       t.alias_of.empty() ? t.name : t.alias_of, ir::dtype_name(t.dtype),
                       int_list(t.shape), int_list(offsets),
                       a.pad ? fmt::format(" pad {}", *a.pad) : "");
  }
  out += "problem:\n  version: 0.4\n  shape:\n";
  out += fmt::format("    name: {}\n", e.name);
  out += "    dimensions: [";
  for (std::size_t i = 0; i < letters.size(); ++i) out += (i ? ", " : "") + letters[i];
  if (need_dummy) out += (letters.empty() ? "" : ", ") + dummy;
  out += "]\n";
  if (!coefficients.empty()) {
    out += "    coefficients:\n";
    for (std::int64_t c : coefficients)
      out += fmt::format("    - name: {}\n      default: {}\n", coefficient_name(c), c);
  }
  out += "    data_spaces:\n";
  for (const WorkloadAccess& a : e.accesses) {
    out += fmt::format("    - name: {}\n      projection:\n", w.tensor_of(a).name);
    for (const ir::AffineExpr& x : a.projection) {
      std::string terms;
      for (const ir::AffineTerm& t : x.terms()) {
        if (!terms.empty()) terms += ", ";
        terms += t.coef == 1 ? fmt::format("[{}]", letters[t.index])
                             : fmt::format("[{}, {}]", letters[t.index], coefficient_name(t.coef));
      }
      if (terms.empty()) terms = fmt::format("[{}]", dummy);
      out += fmt::format("      - [{}]\n", terms);
    }
    if (a.output) out += "      read_write: true\n";
  }
  out += "  instance:\n";
  for (std::size_t i = 0; i < letters.size(); ++i)
    out += fmt::format("    {}: {}\n", letters[i], e.indices[i].extent);
  if (need_dummy) out += fmt::format("    {}: 1\n", dummy);
  return out;
}

std::string timeloop_looptree_workload(const Workload& w) {
  // Dimension names are global in a LoopTree workload (einsum and data-space dimensions
  // alike), so each gets its owner's name.
  std::set<std::string, std::less<>> taken;
  auto unique = [&](std::string base) {
    std::string name = base;
    for (int k = 1; taken.contains(name); ++k) name = fmt::format("{}_{}", base, k);
    taken.insert(name);
    return name;
  };
  std::map<std::string, std::vector<std::string>> tensor_dims;
  std::string out;
  out += comment_safe(fmt::format("# Timeloop LoopTree (fused) workload exported by Solar from "
                                  "graph '{}': {} einsums",
                                  w.graph_name, w.einsums.size())) +
         "\n";
  out += "# linked by data-space name; projections and instances are ISL (offsets and masks "
         "included).\n# Per-einsum classic problems: problems/*.yaml. Solar's figures: "
         "solar-export.json.\nproblem:\n";
  for (const WorkloadEinsum& e : w.einsums) {
    std::vector<std::string> dims;
    for (const std::string& v : e.rank_variables) dims.push_back(unique(v + "_" + e.name));
    out += fmt::format("- shape:\n    name: {}\n    dimensions: [", e.name);
    for (std::size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + dims[i];
    out += "]\n    data_spaces:\n";
    for (const WorkloadAccess& a : e.accesses) {
      const WorkloadTensor& t = w.tensor_of(a);
      auto [it, fresh] = tensor_dims.try_emplace(t.name);
      if (fresh)
        for (std::size_t d = 0; d < t.shape.size(); ++d)
          it->second.push_back(unique(fmt::format("{}_{}", t.name, d)));
      out += fmt::format("    - name: {}\n      dimensions: [", t.name);
      for (std::size_t d = 0; d < it->second.size(); ++d)
        out += (d ? ", " : "") + it->second[d];
      std::string proj = "[";
      for (std::size_t d = 0; d < a.projection.size(); ++d)
        proj += (d ? ", " : "") + isl_affine(a.projection[d], dims);
      out += fmt::format("]\n      projection: {}\n", yaml_quote(proj + "]"));
      if (a.output) out += "      read_write: true\n";
    }
    std::string instance;
    for (std::size_t i = 0; i < dims.size(); ++i)
      instance += fmt::format("{}0 <= {} < {}", i ? " and " : "", dims[i], e.indices[i].extent);
    for (const ir::AffineConstraint& c : e.mask)
      instance += fmt::format("{}{} >= 0", instance.empty() ? "" : " and ",
                              isl_affine(c.expr, dims));
    out += fmt::format("  instance: {}\n", yaml_quote(instance));
  }
  return out;
}

std::vector<ExportFile> timeloop_files(const Workload& w, std::vector<std::string>* skipped) {
  std::vector<ExportFile> files;
  for (const WorkloadEinsum& e : w.einsums) {
    try {
      files.push_back({fmt::format("problems/{}.yaml", e.name), timeloop_problem(w, e)});
    } catch (const Unsupported& u) {
      if (skipped) skipped->push_back(fmt::format("{}: {}", e.name, u.message()));
    }
  }
  files.push_back({"workload.yaml", timeloop_looptree_workload(w)});
  return files;
}

}  // namespace solar::interop
