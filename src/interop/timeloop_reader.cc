// read_timeloop_problems: classic Timeloop problems (schema-checked) back into an EinsumGraph.
//
// The reader writes the graph in Solar's text form and parses it, so the verifier checks
// the result like any other graph.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "solar/interop/timeloop.h"
#include "solar/ir/dtype.h"
#include "solar/ir/text.h"
#include "solar/util/errors.h"

namespace solar::interop {
namespace {

struct Term {
  std::string dim;
  std::int64_t coef = 1;
};

struct DataSpace {
  std::string name;
  std::vector<std::vector<Term>> projection;  // one sum of products per tensor dimension
  bool read_write = false;
};

// What `# solar: data_space` says about one data space.
struct SpaceNote {
  std::string tensor;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> offset;
  std::string pad;  // the text-form pad value, empty when none
};

struct Problem {
  std::string file;
  std::string name;
  std::vector<std::string> dims;
  std::map<std::string, std::int64_t> extent;
  std::vector<DataSpace> spaces;
  // From `# solar:` lines.
  std::string op, combine, reduce;
  std::vector<std::string> masks;
  std::map<std::string, SpaceNote> notes;
};

[[noreturn]] void fail(const std::string& file, const std::string& where, const std::string& what) {
  throw UserError(UserError::Kind::Parse,
                  fmt::format("{}: {}: {} (Timeloop problem schema: problem.shape.{{name, "
                              "dimensions, coefficients, data_spaces}}, problem.instance)",
                              file, where, what),
                  Origin{file, 0, ""});
}

void only_keys(const YAML::Node& n, const std::set<std::string>& allowed, const std::string& file,
               const std::string& where) {
  for (const auto& kv : n) {
    std::string key = kv.first.as<std::string>();
    if (!allowed.contains(key)) {
      std::string list;
      for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(file, where, fmt::format("unknown key '{}' (expected {})", key, list));
    }
  }
}

std::int64_t as_int(const YAML::Node& n, const std::string& file, const std::string& where) {
  try {
    return n.as<std::int64_t>();
  } catch (const YAML::Exception&) {
    fail(file, where, "expected an integer");
  }
}

std::string as_string(const YAML::Node& n, const std::string& file, const std::string& where) {
  if (!n.IsScalar()) fail(file, where, "expected a string");
  return n.as<std::string>();
}

std::vector<std::int64_t> parse_int_list(const std::string& s, const std::string& file) {
  std::vector<std::int64_t> out;
  if (s.size() < 2 || s.front() != '[' || s.back() != ']')
    fail(file, "# solar: data_space", fmt::format("expected [INT,...], found '{}'", s));
  std::stringstream in(s.substr(1, s.size() - 2));
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(std::stoll(item));
  return out;
}

// The `# solar: KEY VALUE` lines of a problem file.
void read_notes(const std::string& text, Problem& p) {
  std::istringstream in(text);
  std::string line;
  const std::string tag = "# solar: ";
  while (std::getline(in, line)) {
    std::size_t at = line.find(tag);
    if (at == std::string::npos || line.find_first_not_of(' ') != at) continue;
    std::string rest = line.substr(at + tag.size());
    std::size_t sp = rest.find(' ');
    std::string key = rest.substr(0, sp), value = sp == std::string::npos ? "" : rest.substr(sp + 1);
    if (key == "op") p.op = value;
    else if (key == "combine") p.combine = value;
    else if (key == "reduce") p.reduce = value;
    else if (key == "mask") p.masks.push_back(value);
    else if (key == "data_space") {
      // NAME tensor TENSOR DTYPE[SHAPE] offset [..] [pad V]
      std::istringstream words(value);
      std::string space, kw, tensor, typed, kw2, offsets, kw3, pad;
      words >> space >> kw >> tensor >> typed >> kw2 >> offsets >> kw3 >> pad;
      std::size_t bracket = typed.find('[');
      if (kw != "tensor" || kw2 != "offset" || bracket == std::string::npos)
        fail(p.file, "# solar: data_space", fmt::format("cannot read '{}'", value));
      SpaceNote note;
      note.tensor = tensor;
      note.dtype = typed.substr(0, bracket);
      note.shape = parse_int_list(typed.substr(bracket), p.file);
      note.offset = parse_int_list(offsets, p.file);
      if (kw3 == "pad") note.pad = pad;
      p.notes[space] = std::move(note);
    }
  }
}

Problem parse_problem(const std::string& file, const std::string& text) {
  Problem p;
  p.file = file;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw UserError(UserError::Kind::Parse,
                    fmt::format("{}:{}: malformed YAML: {}", file, e.mark.line + 1, e.msg),
                    Origin{file, e.mark.line + 1, ""});
  }
  if (!root.IsMap() || !root["problem"]) fail(file, "top level", "no 'problem' key");
  YAML::Node problem = root["problem"];
  if (!problem.IsMap())
    fail(file, "problem",
         "expected a map (a LoopTree workload's list of problems is not read here)");
  only_keys(problem, {"version", "shape", "instance"}, file, "problem");
  if (problem["version"]) {
    std::string v = as_string(problem["version"], file, "problem.version");
    if (v != "0.4") fail(file, "problem.version", fmt::format("version {} is not 0.4", v));
  }
  YAML::Node shape = problem["shape"];
  if (!shape || !shape.IsMap()) fail(file, "problem.shape", "missing, or not a map");
  only_keys(shape, {"name", "dimensions", "coefficients", "data_spaces"}, file, "problem.shape");
  if (shape["name"]) p.name = as_string(shape["name"], file, "problem.shape.name");
  YAML::Node dims = shape["dimensions"];
  if (!dims || !dims.IsSequence() || dims.size() == 0)
    fail(file, "problem.shape.dimensions", "expected a non-empty list of dimension names");
  for (std::size_t i = 0; i < dims.size(); ++i) {
    std::string where = fmt::format("problem.shape.dimensions[{}]", i);
    std::string d = as_string(dims[i], file, where);
    if (d.size() != 1 || !std::isalpha(static_cast<unsigned char>(d[0])))
      fail(file, where, fmt::format("'{}' is not a one-letter dimension name", d));
    if (std::find(p.dims.begin(), p.dims.end(), d) != p.dims.end())
      fail(file, where, fmt::format("dimension '{}' is listed twice", d));
    p.dims.push_back(d);
  }
  std::map<std::string, std::int64_t> coefficients;
  if (YAML::Node cs = shape["coefficients"]) {
    if (!cs.IsSequence()) fail(file, "problem.shape.coefficients", "expected a list");
    for (std::size_t i = 0; i < cs.size(); ++i) {
      std::string where = fmt::format("problem.shape.coefficients[{}]", i);
      if (!cs[i].IsMap()) fail(file, where, "expected {name, default}");
      only_keys(cs[i], {"name", "default"}, file, where);
      if (!cs[i]["name"] || !cs[i]["default"]) fail(file, where, "needs both name and default");
      coefficients[as_string(cs[i]["name"], file, where + ".name")] =
          as_int(cs[i]["default"], file, where + ".default");
    }
  }
  YAML::Node instance = problem["instance"];
  if (!instance || !instance.IsMap()) fail(file, "problem.instance", "missing, or not a map");
  for (const auto& kv : instance) {
    std::string key = kv.first.as<std::string>();
    std::string where = "problem.instance." + key;
    if (key == "densities") continue;  // sparsity: not part of Solar's dense reading
    if (std::find(p.dims.begin(), p.dims.end(), key) != p.dims.end()) {
      std::int64_t v = as_int(kv.second, file, where);
      if (v < 1) fail(file, where, "an extent must be at least 1");
      p.extent[key] = v;
    } else if (coefficients.contains(key)) {
      coefficients[key] = as_int(kv.second, file, where);
    } else {
      fail(file, where, "neither a dimension nor a coefficient of the shape");
    }
  }
  for (const std::string& d : p.dims)
    if (!p.extent.contains(d)) fail(file, "problem.instance", fmt::format("no extent for '{}'", d));

  YAML::Node spaces = shape["data_spaces"];
  if (!spaces || !spaces.IsSequence() || spaces.size() == 0)
    fail(file, "problem.shape.data_spaces", "expected a non-empty list");
  if (spaces.size() > 5)
    fail(file, "problem.shape.data_spaces",
         fmt::format("{} data spaces; Timeloop allows at most 5", spaces.size()));
  auto dim_of = [&](const YAML::Node& n, const std::string& where) {
    std::string d = as_string(n, file, where);
    if (!p.extent.contains(d)) fail(file, where, fmt::format("'{}' is not a dimension", d));
    return d;
  };
  int read_write = 0;
  for (std::size_t s = 0; s < spaces.size(); ++s) {
    std::string where = fmt::format("problem.shape.data_spaces[{}]", s);
    const YAML::Node& n = spaces[s];
    if (!n.IsMap()) fail(file, where, "expected a map");
    only_keys(n, {"name", "projection", "read_write"}, file, where);
    DataSpace ds;
    if (!n["name"]) fail(file, where, "no name");
    ds.name = as_string(n["name"], file, where + ".name");
    for (const DataSpace& other : p.spaces)
      if (other.name == ds.name) fail(file, where, fmt::format("data space '{}' twice", ds.name));
    if (n["read_write"]) {
      try {
        ds.read_write = n["read_write"].as<bool>();
      } catch (const YAML::Exception&) {
        fail(file, where + ".read_write", "expected true or false");
      }
    }
    read_write += ds.read_write;
    YAML::Node proj = n["projection"];
    if (!proj || !proj.IsSequence()) fail(file, where + ".projection", "expected a list");
    for (std::size_t k = 0; k < proj.size(); ++k) {
      std::string pw = fmt::format("{}.projection[{}]", where, k);
      std::vector<Term> expr;
      if (proj[k].IsScalar()) {  // the short form: one dimension per tensor dimension
        expr.push_back({dim_of(proj[k], pw), 1});
      } else if (proj[k].IsSequence() && proj[k].size() > 0) {
        for (std::size_t t = 0; t < proj[k].size(); ++t) {
          std::string tw = fmt::format("{}[{}]", pw, t);
          const YAML::Node& term = proj[k][t];
          if (!term.IsSequence() || term.size() < 1 || term.size() > 2)
            fail(file, tw, "a term is [DIMENSION] or [DIMENSION, COEFFICIENT]");
          Term tm{dim_of(term[0], tw + "[0]"), 1};
          if (term.size() == 2) {
            std::string c = as_string(term[1], file, tw + "[1]");
            if (!coefficients.contains(c))
              fail(file, tw + "[1]", fmt::format("'{}' is not a coefficient", c));
            tm.coef = coefficients[c];
          }
          expr.push_back(tm);
        }
      } else {
        fail(file, pw, "expected a list of terms");
      }
      ds.projection.push_back(std::move(expr));
    }
    p.spaces.push_back(std::move(ds));
  }
  if (read_write != 1)
    fail(file, "problem.shape.data_spaces",
         fmt::format("{} read_write data spaces; a problem has exactly one (its output)",
                     read_write));
  // The output last, as Solar's operands-then-output order has it.
  std::stable_partition(p.spaces.begin(), p.spaces.end(),
                        [](const DataSpace& d) { return !d.read_write; });
  read_notes(text, p);
  if (p.name.empty()) p.name = file;
  return p;
}

// The Solar text of sum(terms) + offset; dimensions in `unit` (extent 1) are always 0.
std::string affine_text(const std::vector<Term>& terms, std::int64_t offset,
                        const std::set<std::string>& unit) {
  std::string out;
  for (const Term& t : terms) {
    if (unit.contains(t.dim)) continue;
    if (!out.empty() || t.coef < 0) out += t.coef < 0 ? "-" : "+";
    std::int64_t a = t.coef < 0 ? -t.coef : t.coef;
    out += a == 1 ? t.dim : fmt::format("{}*{}", t.dim, a);
  }
  if (offset != 0 || out.empty()) out += fmt::format("{}{}", offset < 0 || out.empty() ? "" : "+", offset);
  return out;
}

struct TensorInfo {
  std::string dtype;
  std::vector<std::int64_t> shape;
  bool annotated = false;
  int producer = -1;
  bool read = false;
};

std::string quote_name(const std::string& s) {
  bool plain = !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
  for (char c : s) plain &= std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  if (plain) return s;
  std::string out = "\"";
  for (char c : s) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

}  // namespace

ir::Graph read_timeloop_problems(const std::vector<std::pair<std::string, std::string>>& files,
                                 const std::string& graph_name) {
  std::vector<Problem> problems;
  for (const auto& [file, text] : files) problems.push_back(parse_problem(file, text));

  // Tensors: a data space's tensor (its note's, else its own name), shape and dtype.
  std::map<std::string, TensorInfo> tensors;
  auto tensor_of = [](const Problem& p, const DataSpace& d) {
    auto it = p.notes.find(d.name);
    return it == p.notes.end() ? d.name : it->second.tensor;
  };
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const Problem& p = problems[i];
    for (const DataSpace& d : p.spaces) {
      TensorInfo& t = tensors[tensor_of(p, d)];
      auto note = p.notes.find(d.name);
      std::vector<std::int64_t> shape;
      if (note != p.notes.end()) {
        if (note->second.offset.size() != d.projection.size() ||
            note->second.shape.size() != d.projection.size())
          fail(p.file, "# solar: data_space " + d.name,
               "its shape and offsets do not match the projection's rank");
        if (t.annotated && (t.shape != note->second.shape || t.dtype != note->second.dtype))
          fail(p.file, "# solar: data_space " + d.name,
               fmt::format("tensor '{}' has another type in an earlier problem", note->second.tensor));
        t.shape = note->second.shape;
        t.dtype = note->second.dtype;
        t.annotated = true;
      } else if (!t.annotated) {
        // Timeloop's semantics: the data space is the range of its projection.
        t.dtype = "f32";
        if (t.shape.size() < d.projection.size()) t.shape.resize(d.projection.size(), 0);
        for (std::size_t k = 0; k < d.projection.size(); ++k) {
          std::int64_t hi = 0;
          for (const Term& term : d.projection[k])
            hi += term.coef * (term.coef > 0 ? p.extent.at(term.dim) - 1 : 0);
          t.shape[k] = std::max(t.shape[k], hi + 1);
        }
      }
      if (d.read_write) {
        if (t.producer >= 0)
          fail(p.file, "problem.shape.data_spaces",
               fmt::format("'{}' is written by two problems", tensor_of(p, d)));
        t.producer = static_cast<int>(i);
      } else {
        t.read = true;
      }
    }
  }

  // Problems in an order where each reads only what earlier ones wrote (Kahn, stable).
  std::vector<int> order;
  std::vector<bool> done(problems.size(), false);
  while (order.size() < problems.size()) {
    bool progress = false;
    for (std::size_t i = 0; i < problems.size(); ++i) {
      if (done[i]) continue;
      bool ready = true;
      for (const DataSpace& d : problems[i].spaces) {
        const TensorInfo& t = tensors[tensor_of(problems[i], d)];
        if (!d.read_write && t.producer >= 0 && !done[t.producer]) ready = false;
      }
      if (ready) {
        order.push_back(static_cast<int>(i));
        done[i] = true;
        progress = true;
      }
    }
    if (!progress)
      throw UserError(UserError::Kind::InvalidGraph,
                      "the problems read each other's outputs in a cycle");
  }

  std::string text = fmt::format("graph {}\n", quote_name(graph_name));
  for (const auto& [name, t] : tensors) {
    if (t.producer >= 0) continue;
    text += fmt::format("{} = {}[{}] input\n", quote_name(name), t.dtype,
                        fmt::join(t.shape, ","));
  }
  std::set<std::string> op_names;
  for (int i : order) {
    const Problem& p = problems[i];
    const DataSpace& out = p.spaces.back();
    std::string out_tensor = tensor_of(p, out);
    const TensorInfo& ot = tensors[out_tensor];
    // A dimension of extent 1 is always 0 (the export's `Z` for constant subscripts): it is
    // left out of the iteration space unless a mask names it.
    std::set<std::string> unit;
    for (const std::string& d : p.dims) {
      bool in_mask = false;
      for (const std::string& m : p.masks)
        for (std::size_t at = m.find(d); at != std::string::npos; at = m.find(d, at + 1)) {
          auto ident = [&](std::size_t k) {
            return k < m.size() && (std::isalnum(static_cast<unsigned char>(m[k])) || m[k] == '_');
          };
          in_mask |= !(at > 0 && ident(at - 1)) && !ident(at + d.size());
        }
      if (p.extent.at(d) == 1 && !in_mask) unit.insert(d);
    }
    std::vector<std::string> indices, operands;
    for (const std::string& d : p.dims)
      if (!unit.contains(d)) indices.push_back(fmt::format("{}={}", d, p.extent.at(d)));
    std::set<std::string> out_dims;
    auto access = [&](const DataSpace& d) {
      auto note = p.notes.find(d.name);
      std::vector<std::string> subs;
      for (std::size_t k = 0; k < d.projection.size(); ++k)
        subs.push_back(affine_text(d.projection[k],
                                   note == p.notes.end() ? 0 : note->second.offset[k], unit));
      std::string s = fmt::format("{}[{}]", quote_name(tensor_of(p, d)), fmt::join(subs, ","));
      if (note != p.notes.end() && !note->second.pad.empty()) s += " pad " + note->second.pad;
      return s;
    };
    for (const DataSpace& d : p.spaces) {
      if (d.read_write) {
        for (const auto& e : d.projection)
          for (const Term& t : e)
            if (!unit.contains(t.dim)) out_dims.insert(t.dim);
        continue;
      }
      operands.push_back(access(d));
    }
    std::string combine = p.combine;
    if (combine.empty()) {
      combine = operands.empty() ? "0" : "$0";
      for (std::size_t k = 1; k < operands.size(); ++k) combine = fmt::format("mul({},${})", combine, k);
    }
    std::string reduce = p.reduce;
    if (reduce.empty()) reduce = out_dims.size() == indices.size() ? "none" : "sum";
    std::string out_access = access(out);
    std::string out_subs = out_access.substr(out_access.find('['));
    std::string name = p.op.empty() ? p.name : p.op;
    for (int k = 1; op_names.contains(name); ++k) name = fmt::format("{}_{}", p.op.empty() ? p.name : p.op, k);
    op_names.insert(name);
    text += fmt::format("{} = {}[{}]{} einsum [{}] {} {} ({}) -> {}", quote_name(out_tensor),
                        ot.dtype, fmt::join(ot.shape, ","), ot.read ? "" : "{output}",
                        fmt::join(indices, ","), reduce, combine, fmt::join(operands, ", "),
                        out_subs);
    if (!p.masks.empty()) text += " where " + fmt::format("{}", fmt::join(p.masks, ", "));
    std::string quoted = quote_name(name);
    if (quoted.front() != '"') quoted = '"' + quoted + '"';
    text += fmt::format(" name {}\n", quoted);
  }
  return ir::parse_graph(text, files.empty() ? "<timeloop>" : files.front().first);
}

}  // namespace solar::interop
