#include "solar/ir/attrs.h"

#include <fmt/format.h>

#include <variant>

#include "solar/util/errors.h"

namespace solar::ir {

namespace {

[[noreturn]] void wrong_type(std::string_view key, const char* type, std::string_view context) {
  throw UserError(UserError::Kind::InvalidGraph,
                  fmt::format("{}attribute '{}' must be {}", context, key, type));
}

}  // namespace

const AttrValue* find_attr(const Attrs& a, std::string_view key) {
  auto it = a.find(std::string(key));
  return it == a.end() ? nullptr : &it->second;
}

std::optional<std::int64_t> find_int(const Attrs& a, std::string_view key) {
  const AttrValue* v = find_attr(a, key);
  const auto* i = v ? std::get_if<std::int64_t>(v) : nullptr;
  return i ? std::optional<std::int64_t>(*i) : std::nullopt;
}

std::optional<double> find_number(const Attrs& a, std::string_view key) {
  const AttrValue* v = find_attr(a, key);
  if (!v) return std::nullopt;
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(v)) return static_cast<double>(*i);
  return std::nullopt;
}

const std::string* find_string(const Attrs& a, std::string_view key) {
  const AttrValue* v = find_attr(a, key);
  return v ? std::get_if<std::string>(v) : nullptr;
}

const std::vector<std::int64_t>* find_int_list(const Attrs& a, std::string_view key) {
  const AttrValue* v = find_attr(a, key);
  return v ? std::get_if<std::vector<std::int64_t>>(v) : nullptr;
}

std::int64_t int_attr(const Attrs& a, std::string_view key, std::int64_t fallback,
                      std::string_view context) {
  if (!find_attr(a, key)) return fallback;
  if (std::optional<std::int64_t> v = find_int(a, key)) return *v;
  wrong_type(key, "an integer", context);
}

double number_attr(const Attrs& a, std::string_view key, double fallback,
                   std::string_view context) {
  if (!find_attr(a, key)) return fallback;
  if (std::optional<double> v = find_number(a, key)) return *v;
  wrong_type(key, "a number", context);
}

std::string string_attr(const Attrs& a, std::string_view key, std::string_view fallback,
                        std::string_view context) {
  if (!find_attr(a, key)) return std::string(fallback);
  if (const std::string* v = find_string(a, key)) return *v;
  wrong_type(key, "a string", context);
}

std::vector<std::int64_t> int_list_attr(const Attrs& a, std::string_view key,
                                        std::string_view context) {
  if (!find_attr(a, key)) return {};
  if (const std::vector<std::int64_t>* v = find_int_list(a, key)) return *v;
  if (std::optional<std::int64_t> v = find_int(a, key)) return {*v};
  wrong_type(key, "a list of integers", context);
}

bool slice_copies(const Op& op) {
  if (!find_attr(op.move().attrs, "copy")) return false;
  if (std::optional<double> d = find_number(op.move().attrs, "copy")) return *d != 0;
  throw UserError(UserError::Kind::InvalidGraph, "slice attribute 'copy' must be 0 or 1",
                  op_origin(op));
}

bool is_free_view(const Op& op) {
  if (op.kind() != OpKind::Move) return false;
  switch (op.move().kind) {
    case MoveKind::View: return true;
    case MoveKind::Slice: return !slice_copies(op);
    case MoveKind::Copy: case MoveKind::Permute: case MoveKind::Concat: case MoveKind::Pad:
    case MoveKind::Gather: case MoveKind::Scatter: case MoveKind::Cast:
      return false;
  }
  return false;
}

}  // namespace solar::ir
