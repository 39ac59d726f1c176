// Reading and writing the OpTrace JSON form (docs/optrace.md).
#include "solar/lower/optrace.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "solar/util/errors.h"

namespace solar::lower {
namespace {

[[noreturn]] void bad(std::string_view file, const std::string& what) {
  throw UserError(UserError::Kind::Parse, fmt::format("{}: {}", file, what));
}

const nlohmann::json& field(const nlohmann::json& j, const char* key, std::string_view file,
                            const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) bad(file, fmt::format("{} has no field '{}'", where, key));
  return *it;
}

std::vector<std::int64_t> int_list(const nlohmann::json& j, std::string_view file,
                                   const std::string& where) {
  if (!j.is_array()) bad(file, fmt::format("{} must be a list of integers", where));
  std::vector<std::int64_t> v;
  for (const auto& x : j) {
    if (!x.is_number_integer()) bad(file, fmt::format("{} must be a list of integers", where));
    v.push_back(x.get<std::int64_t>());
  }
  return v;
}

}  // namespace

std::string_view trace_role_name(TraceRole r) {
  switch (r) {
    case TraceRole::Input: return "input";
    case TraceRole::Parameter: return "parameter";
    case TraceRole::Buffer: return "buffer";
    case TraceRole::Constant: return "constant";
    case TraceRole::Intermediate: return "intermediate";
    case TraceRole::Output: return "output";
  }
  return "?";
}

std::optional<TraceRole> parse_trace_role(std::string_view name) {
  for (TraceRole r : {TraceRole::Input, TraceRole::Parameter, TraceRole::Buffer,
                      TraceRole::Constant, TraceRole::Intermediate, TraceRole::Output})
    if (trace_role_name(r) == name) return r;
  return std::nullopt;
}

const TraceTensor& OpTrace::tensor(std::int64_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= index_.size() || index_[id] == 0)
    throw UserError(UserError::Kind::Parse,
                    fmt::format("OpTrace refers to tensor id {}, which it does not declare", id));
  return tensors[index_[id] - 1];
}

OpTrace optrace_from_json(const nlohmann::json& j, std::string_view file) {
  if (!j.is_object()) bad(file, "an OpTrace is a JSON object");
  const auto& schema = field(j, "schema", file, "the OpTrace");
  if (!schema.is_string() || schema.get<std::string>() != kOpTraceSchema)
    bad(file, fmt::format("schema must be \"{}\"", kOpTraceSchema));
  OpTrace t;
  if (auto it = j.find("name"); it != j.end() && it->is_string()) t.name = *it;
  if (auto it = j.find("frontend"); it != j.end() && it->is_string()) t.frontend = *it;
  if (auto it = j.find("source"); it != j.end() && it->is_string()) t.source = *it;
  const auto& tensors = field(j, "tensors", file, "the OpTrace");
  if (!tensors.is_array()) bad(file, "'tensors' must be a list");
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const auto& x = tensors[k];
    std::string where = fmt::format("tensors[{}]", k);
    if (!x.is_object()) bad(file, where + " must be an object");
    TraceTensor tt;
    const auto& id = field(x, "id", file, where);
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() > (1 << 30))
      bad(file, where + ".id must be an integer in [0, 2^30]");
    tt.id = id.get<std::int64_t>();
    tt.shape = int_list(field(x, "shape", file, where), file, where + ".shape");
    for (std::int64_t s : tt.shape)
      if (s < 0) bad(file, where + ".shape has a negative extent");
    if (auto it = x.find("strides"); it != x.end() && !it->is_null())
      tt.strides = int_list(*it, file, where + ".strides");
    const auto& dt = field(x, "dtype", file, where);
    if (!dt.is_string()) bad(file, where + ".dtype must be a string");
    tt.dtype = dt.get<std::string>();
    if (auto it = x.find("name"); it != x.end() && it->is_string()) tt.name = *it;
    if (auto it = x.find("storage"); it != x.end() && it->is_number_integer()) tt.storage = *it;
    if (auto it = x.find("storage_offset"); it != x.end() && it->is_number_integer())
      tt.storage_offset = *it;
    const auto& role = field(x, "role", file, where);
    std::optional<TraceRole> r = role.is_string() ? parse_trace_role(role.get<std::string>())
                                                  : std::nullopt;
    if (!r)
      bad(file, where + ".role must be input, parameter, buffer, constant, intermediate or output");
    tt.role = *r;
    if (auto it = x.find("dims"); it != x.end() && !it->is_null()) {
      if (!it->is_array() || it->size() != tt.shape.size())
        bad(file, where + ".dims must be a list of one name per dimension");
      for (const auto& d : *it) {
        if (!d.is_string()) bad(file, where + ".dims must hold strings");
        tt.dims.push_back(d.get<std::string>());
      }
    }
    if (auto it = x.find("sparsity"); it != x.end() && !it->is_null()) {
      const auto z = it->is_object() ? it->find("zero_fraction") : it->end();
      if (z == it->end() || !z->is_number())
        bad(file, where + ".sparsity must be {\"zero_fraction\": F, \"structured_2_4\": B}");
      ir::Sparsity sp;
      sp.zero_fraction = z->get<double>();
      sp.structured_2_4 = it->value("structured_2_4", false);
      tt.sparsity = sp;
    }
    if (auto it = x.find("band"); it != x.end() && !it->is_null()) {
      const std::string msg = where +
                              ".band must be {\"lower\": N|null, \"upper\": N|null, \"inside\": V, "
                              "\"outside\": V} on a tensor of rank 2 or more";
      if (!it->is_object() || tt.shape.size() < 2) bad(file, msg);
      TraceBand b;
      auto bound = [&](const char* k) -> std::optional<std::int64_t> {
        auto f = it->find(k);
        if (f == it->end() || f->is_null()) return std::nullopt;
        if (!f->is_number_integer()) bad(file, msg);
        return f->get<std::int64_t>();
      };
      auto number = [&](const char* k) -> double {
        auto f = it->find(k);
        if (f == it->end()) bad(file, msg);
        if (f->is_number()) return f->get<double>();
        if (f->is_boolean()) return f->get<bool>() ? 1 : 0;
        if (f->is_object() && f->contains("float") && (*f)["float"].is_string()) {
          const std::string v = (*f)["float"];
          if (v == "inf") return std::numeric_limits<double>::infinity();
          if (v == "-inf") return -std::numeric_limits<double>::infinity();
        }
        bad(file, msg);
        return 0;
      };
      b.lower = bound("lower");
      b.upper = bound("upper");
      b.inside = number("inside");
      b.outside = number("outside");
      tt.band = b;
    }
    if (static_cast<std::size_t>(tt.id) >= t.index_.size()) t.index_.resize(tt.id + 1, 0);
    if (t.index_[tt.id] != 0) bad(file, fmt::format("tensor id {} is declared twice", tt.id));
    t.tensors.push_back(std::move(tt));
    t.index_[t.tensors.back().id] = t.tensors.size();
  }
  const auto& ops = field(j, "ops", file, "the OpTrace");
  if (!ops.is_array()) bad(file, "'ops' must be a list");
  for (std::size_t k = 0; k < ops.size(); ++k) {
    const auto& x = ops[k];
    std::string where = fmt::format("ops[{}]", k);
    if (!x.is_object()) bad(file, where + " must be an object");
    TraceOp op;
    const auto& name = field(x, "op", file, where);
    if (!name.is_string()) bad(file, where + ".op must be a string");
    op.op = name.get<std::string>();
    op.args = x.value("args", nlohmann::json::object());
    if (!op.args.is_object()) bad(file, where + ".args must be an object");
    const auto& outs = field(x, "outputs", file, where);
    if (!outs.is_array()) bad(file, where + ".outputs must be a list");
    for (const auto& o : outs) {
      if (o.is_null()) {
        op.outputs.push_back(std::nullopt);
        continue;
      }
      if (!o.is_number_integer()) bad(file, where + ".outputs must hold tensor ids or null");
      op.outputs.push_back(o.get<std::int64_t>());
      (void)t.tensor(o.get<std::int64_t>());
    }
    if (auto it = x.find("file"); it != x.end() && it->is_string()) op.file = *it;
    if (auto it = x.find("line"); it != x.end() && it->is_number_integer()) op.line = *it;
    if (auto it = x.find("module"); it != x.end() && !it->is_null()) {
      if (!it->is_string()) bad(file, where + ".module must be a string");
      op.module = it->get<std::string>();
    }
    t.ops.push_back(std::move(op));
  }
  if (auto it = j.find("modules"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) bad(file, "'modules' must be an object of module path -> class name");
    for (const auto& [path, type] : it->items()) {
      if (!type.is_string()) bad(file, fmt::format("modules[\"{}\"] must be a class name", path));
      t.modules[path] = type.get<std::string>();
    }
  }
  return t;
}

OpTrace parse_optrace(std::string_view text, std::string_view file) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) bad(file, "not valid JSON");
  return optrace_from_json(j, file);
}

nlohmann::json optrace_to_json(const OpTrace& t) {
  nlohmann::json j;
  j["schema"] = kOpTraceSchema;
  j["name"] = t.name;
  j["frontend"] = t.frontend;
  if (!t.source.empty()) j["source"] = t.source;
  j["tensors"] = nlohmann::json::array();
  for (const TraceTensor& x : t.tensors) {
    nlohmann::json o{{"id", x.id}, {"shape", x.shape}, {"dtype", x.dtype},
                     {"role", trace_role_name(x.role)}};
    if (!x.name.empty()) o["name"] = x.name;
    if (!x.strides.empty()) o["strides"] = x.strides;
    if (x.storage >= 0) o["storage"] = x.storage;
    if (x.storage_offset != 0) o["storage_offset"] = x.storage_offset;
    if (!x.dims.empty()) o["dims"] = x.dims;
    if (x.sparsity)
      o["sparsity"] = {{"zero_fraction", x.sparsity->zero_fraction},
                       {"structured_2_4", x.sparsity->structured_2_4}};
    if (x.band) {
      auto number = [](double v) -> nlohmann::json {
        if (std::isinf(v)) return {{"float", v > 0 ? "inf" : "-inf"}};
        return v;
      };
      nlohmann::json b{{"inside", number(x.band->inside)}, {"outside", number(x.band->outside)}};
      b["lower"] = x.band->lower ? nlohmann::json(*x.band->lower) : nlohmann::json(nullptr);
      b["upper"] = x.band->upper ? nlohmann::json(*x.band->upper) : nlohmann::json(nullptr);
      o["band"] = std::move(b);
    }
    j["tensors"].push_back(std::move(o));
  }
  j["ops"] = nlohmann::json::array();
  for (const TraceOp& op : t.ops) {
    nlohmann::json o{{"op", op.op}, {"args", op.args}};
    o["outputs"] = nlohmann::json::array();
    for (const auto& id : op.outputs) o["outputs"].push_back(id ? nlohmann::json(*id) : nullptr);
    if (!op.file.empty()) o["file"] = op.file;
    if (op.line) o["line"] = op.line;
    if (!op.module.empty()) o["module"] = op.module;
    j["ops"].push_back(std::move(o));
  }
  if (!t.modules.empty()) j["modules"] = t.modules;
  return j;
}

}  // namespace solar::lower
