#include "solar/util/errors.h"

#include <fmt/format.h>

namespace solar {

std::string Origin::describe() const {
  std::string out;
  if (!file.empty()) out += line > 0 ? fmt::format("{}:{}", file, line) : file;
  if (!op.empty()) {
    if (!out.empty()) out += ": ";
    out += fmt::format("op '{}'", op);
  }
  return out;
}

namespace {
std::string with_origin(const std::string& message, const Origin& origin) {
  std::string where = origin.describe();
  return where.empty() ? message : where + ": " + message;
}
}  // namespace

Error::Error(const std::string& message, Origin origin)
    : std::runtime_error(with_origin(message, origin)), message_(message), origin_(std::move(origin)) {}

InternalError::InternalError(const std::string& message, const char* file, int line)
    : Error(fmt::format("internal error: {} (please report; detected at {}:{})", message, file, line)) {}

}  // namespace solar
