#include "framework/base/json.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "glog/logging.h"
#include "nlohmann/json.hpp"

namespace tandem {
namespace {

using Library = nlohmann::ordered_json;

constexpr size_t kMaxKeysInError = 10;
constexpr size_t kMaxStringInError = 32;
// Objects at least this large use a hash map to find duplicate keys while
// parsing and to compare members in ==; smaller ones scan linearly.
constexpr size_t kHashThreshold = 16;

// ---------------------------------------------------------------------------
// Writing: through nlohmann-json.

Library ToLibrary(const Json& j) {
  switch (j.type()) {
    case Json::Type::kNull: return nullptr;
    case Json::Type::kBool: return j.bool_value();
    case Json::Type::kInt: return j.int_value();
    case Json::Type::kDouble: return j.double_value();
    case Json::Type::kString: return j.string_value();
    case Json::Type::kArray: {
      Library out = Library::array();
      Library::array_t& elements = out.get_ref<Library::array_t&>();
      elements.reserve(j.size());
      for (const Json& e : j.array()) elements.push_back(ToLibrary(e));
      return out;
    }
    case Json::Type::kObject: {
      Library out = Library::object();
      Library::object_t& members = out.get_ref<Library::object_t&>();
      members.reserve(j.size());
      // Keys are unique already: append without ordered_map's linear search.
      for (const auto& [key, value] : j.object()) members.emplace_back(key, ToLibrary(value));
      return out;
    }
  }
  return nullptr;
}

std::string DumpLibrary(const Library& j, int indent) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, Library::error_handler_t::replace);
}

// `s` as a JSON string literal, for messages.
std::string Quoted(absl::string_view s) { return DumpLibrary(Library(std::string(s)), -1); }

// A short description of `j` for error messages: `string "abc"`, `int 5`,
// `double 0.5`, `array (3 elements)`.
std::string Describe(const Json& j) {
  switch (j.type()) {
    case Json::Type::kNull: return "null";
    case Json::Type::kBool: return j.bool_value() ? "bool true" : "bool false";
    case Json::Type::kInt: return absl::StrCat("int ", j.int_value());
    case Json::Type::kDouble:
      // Dump() would print NaN and infinities as null.
      return std::isfinite(j.double_value()) ? absl::StrCat("double ", j.Dump())
                                             : absl::StrCat("double ", j.double_value());
    case Json::Type::kString: {
      const std::string& s = j.string_value();
      if (s.size() <= kMaxStringInError) return absl::StrCat("string ", Quoted(s));
      return absl::StrCat("string ", Quoted(s.substr(0, kMaxStringInError)), "...");
    }
    case Json::Type::kArray: return absl::StrCat("array (", j.size(), " elements)");
    case Json::Type::kObject: return absl::StrCat("object (", j.size(), " members)");
  }
  return "?";
}

absl::Status TypeError(absl::string_view expected, const Json& got) {
  return absl::InvalidArgumentError(
      absl::StrCat("json: expected ", expected, ", got ", Describe(got)));
}

// Prefixes a "json: ..." error with `json: key "k": `.
absl::Status KeyError(absl::string_view key, const absl::Status& s) {
  absl::string_view msg = s.message();
  absl::ConsumePrefix(&msg, "json: ");
  return absl::Status(s.code(), absl::StrCat("json: key ", Quoted(key), ": ", msg));
}

// ---------------------------------------------------------------------------
// Parsing: nlohmann-json's SAX parser (it reports errors through
// parse_error() instead of throwing) feeding a builder of Json values.

// Moves `members` into a list with unique keys: a repeated key keeps the
// position of its first occurrence and the value of its last.
Json::Members DedupeMembers(Json::Members members) {
  const size_t n = members.size();
  if (n < 2) return members;
  if (n < kHashThreshold) {
    bool has_duplicates = false;
    for (size_t i = 1; i < n && !has_duplicates; ++i) {
      for (size_t k = 0; k < i; ++k) {
        if (members[k].first == members[i].first) {
          has_duplicates = true;
          break;
        }
      }
    }
    if (!has_duplicates) return members;
  }
  Json::Members out;
  out.reserve(n);  // no reallocation: the map's views point into `out`
  absl::flat_hash_map<absl::string_view, size_t> index;
  index.reserve(n);
  for (Json::Member& m : members) {
    auto it = index.find(m.first);
    if (it != index.end()) {
      out[it->second].second = std::move(m.second);
    } else {
      out.push_back(std::move(m));
      index.emplace(out.back().first, out.size() - 1);
    }
  }
  return out;
}

class Builder final : public nlohmann::json_sax<Library> {
 public:
  bool null() override { return Add(Json()); }
  bool boolean(bool b) override { return Add(Json(b)); }
  bool number_integer(number_integer_t v) override { return Add(Json(v)); }
  // Above INT64_MAX: a double (Json's uint64 constructor).
  bool number_unsigned(number_unsigned_t v) override { return Add(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return Add(Json(v)); }
  bool string(string_t& s) override { return Add(Json(std::move(s))); }
  bool binary(binary_t&) override { return false; }  // only binary formats have these
  bool start_object(size_t) override { return Open(/*object=*/true); }
  bool key(string_t& k) override {
    open_.back().members.emplace_back(std::move(k), Json());
    return true;
  }
  bool end_object() override {
    Json::Members members = std::move(open_.back().members);
    open_.pop_back();
    return Add(Json::Object(std::move(members)));
  }
  bool start_array(size_t) override { return Open(/*object=*/false); }
  bool end_array() override {
    Json::Elements elements = std::move(open_.back().elements);
    open_.pop_back();
    return Add(Json::Array(std::move(elements)));
  }
  bool parse_error(size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& e) override {
    error_position_ = position;
    error_ = e.what();
    // The message quotes the whole token read so far ("last read: '...'"),
    // which for a string can be long: keep its tail, where it went wrong.
    if (last_token.size() > kMaxStringInError) {
      const size_t at = error_.find(last_token);
      if (at != std::string::npos) {
        const absl::string_view tail =
            absl::string_view(last_token).substr(last_token.size() - kMaxStringInError);
        error_.replace(at, last_token.size(), absl::StrCat("...", tail));
      }
    }
    return false;
  }

  Json& root() { return root_; }
  bool too_deep() const { return too_deep_; }
  // nlohmann counts the bytes it read, the one it failed on (or the end of
  // input) included.
  size_t error_offset() const { return error_position_ == 0 ? 0 : error_position_ - 1; }
  // What went wrong, without nlohmann's "[json.exception.parse_error.101]
  // parse error at line L, column C: " (its column counts differently).
  absl::string_view error() const {
    absl::string_view what = error_;
    const size_t tag_end = what.find("] ");
    if (absl::StartsWith(what, "[json.exception.") && tag_end != absl::string_view::npos) {
      what.remove_prefix(tag_end + 2);
    }
    if (absl::StartsWith(what, "parse error")) {
      const size_t colon = what.find(": ");
      if (colon != absl::string_view::npos) what.remove_prefix(colon + 2);
    }
    return what;
  }

 private:
  struct Frame {
    bool object;
    Json::Elements elements;
    Json::Members members;
  };

  bool Open(bool object) {
    if (open_.size() >= static_cast<size_t>(Json::kMaxDepth)) {
      too_deep_ = true;
      return false;
    }
    open_.push_back({object, {}, {}});
    return true;
  }

  bool Add(Json value) {
    if (open_.empty()) {
      root_ = std::move(value);
    } else if (open_.back().object) {
      open_.back().members.back().second = std::move(value);
    } else {
      open_.back().elements.push_back(std::move(value));
    }
    return true;
  }

  std::vector<Frame> open_;  // arrays and objects being read, innermost last
  Json root_;
  bool too_deep_ = false;
  size_t error_position_ = 0;
  std::string error_;
};

// The offset of the bracket that opens nesting level Json::kMaxDepth + 1 in
// `text`, which is valid JSON up to there.
size_t TooDeepOffset(absl::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > Json::kMaxDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return text.size();
}

absl::Status ParseError(absl::string_view text, size_t offset, absl::string_view what) {
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("json: line ", line, ", column ", offset - line_start + 1, ": ", what));
}

}  // namespace

absl::StatusOr<Json> ParseJson(absl::string_view text) {
  Builder builder;
  const bool parsed = Library::sax_parse(text.begin(), text.end(), &builder);
  if (!parsed && builder.too_deep()) {
    return ParseError(text, TooDeepOffset(text),
                      absl::StrCat("nesting depth exceeds ", Json::kMaxDepth));
  }
  // nlohmann takes a NUL byte outside a string for the end of input.
  const size_t nul = text.find('\0');
  if (nul != absl::string_view::npos &&
      (parsed || (builder.error_offset() == nul &&
                  absl::StrContains(builder.error(), "unexpected end of input")))) {
    return ParseError(text, nul, "syntax error while parsing value - unexpected NUL byte");
  }
  if (!parsed) {
    return ParseError(text, std::min(builder.error_offset(), text.size()), builder.error());
  }
  return std::move(builder.root());
}

// ---------------------------------------------------------------------------
// Json.

Json Json::Object(Members members) {
  return Json(DedupeMembers(std::move(members)));
}

Json::Json(const char* s) {
  if (s != nullptr) value_.emplace<std::string>(s);
}
Json::Json(absl::string_view s) : value_(std::string(s)) {}
#ifndef ABSL_USES_STD_STRING_VIEW
Json::Json(std::string_view s) : value_(std::string(s)) {}
#endif
Json::Json(std::string s) : value_(std::move(s)) {}

absl::string_view JsonTypeName(Json::Type type) {
  switch (type) {
    case Json::Type::kNull: return "null";
    case Json::Type::kBool: return "bool";
    case Json::Type::kInt: return "int";
    case Json::Type::kDouble: return "double";
    case Json::Type::kString: return "string";
    case Json::Type::kArray: return "array";
    case Json::Type::kObject: return "object";
  }
  return "?";
}

absl::StatusOr<bool> Json::AsBool() const {
  if (!is_bool()) return TypeError("bool", *this);
  return std::get<bool>(value_);
}

absl::StatusOr<int64_t> Json::AsInt() const {
  if (is_int()) return std::get<int64_t>(value_);
  if (is_double()) {
    const double d = std::get<double>(value_);
    // [-2^63, 2^63): both bounds are exact doubles.
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
        std::trunc(d) == d) {
      return static_cast<int64_t>(d);
    }
  }
  return TypeError("int", *this);
}

absl::StatusOr<double> Json::AsDouble() const {
  if (is_double()) return std::get<double>(value_);
  if (is_int()) return static_cast<double>(std::get<int64_t>(value_));
  return TypeError("number", *this);
}

absl::StatusOr<std::string> Json::AsString() const {
  if (!is_string()) return TypeError("string", *this);
  return std::get<std::string>(value_);
}

absl::StatusOr<const Json::Elements*> Json::AsArray() const {
  if (!is_array()) return TypeError("array", *this);
  return &std::get<Elements>(value_);
}

absl::StatusOr<const Json::Members*> Json::AsObject() const {
  if (!is_object()) return TypeError("object", *this);
  return &std::get<Members>(value_);
}

bool Json::bool_value() const {
  CHECK(is_bool()) << "json: expected bool, got " << JsonTypeName(type());
  return std::get<bool>(value_);
}

int64_t Json::int_value() const {
  CHECK(is_int()) << "json: expected int, got " << JsonTypeName(type());
  return std::get<int64_t>(value_);
}

double Json::double_value() const {
  CHECK(is_number()) << "json: expected number, got " << JsonTypeName(type());
  return is_int() ? static_cast<double>(std::get<int64_t>(value_))
                  : std::get<double>(value_);
}

const std::string& Json::string_value() const {
  CHECK(is_string()) << "json: expected string, got " << JsonTypeName(type());
  return std::get<std::string>(value_);
}

const Json::Elements& Json::array() const {
  CHECK(is_array()) << "json: expected array, got " << JsonTypeName(type());
  return std::get<Elements>(value_);
}

Json::Elements& Json::mutable_array() {
  CHECK(is_array()) << "json: expected array, got " << JsonTypeName(type());
  return std::get<Elements>(value_);
}

const Json::Members& Json::object() const {
  CHECK(is_object()) << "json: expected object, got " << JsonTypeName(type());
  return std::get<Members>(value_);
}

const Json* Json::Find(absl::string_view key) const {
  if (!is_object()) return nullptr;
  for (const Member& m : std::get<Members>(value_)) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

Json* Json::Find(absl::string_view key) {
  return const_cast<Json*>(static_cast<const Json*>(this)->Find(key));
}

absl::StatusOr<const Json*> Json::Get(absl::string_view key) const {
  if (!is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("json: cannot get key ", Quoted(key),
                                                   ": expected object, got ", Describe(*this)));
  }
  if (const Json* v = Find(key)) return v;
  std::string msg = absl::StrCat("json: key ", Quoted(key), " not found; keys: ");
  const Members& members = std::get<Members>(value_);
  if (members.empty()) msg += "(none)";
  for (size_t i = 0; i < members.size() && i < kMaxKeysInError; ++i) {
    if (i > 0) msg += ", ";
    absl::StrAppend(&msg, Quoted(members[i].first));
  }
  if (members.size() > kMaxKeysInError) {
    absl::StrAppend(&msg, ", ... (", members.size(), " in all)");
  }
  return absl::InvalidArgumentError(msg);
}

#define TANDEM_JSON_KEY_GETTER_(Name, As, T)                         \
  absl::StatusOr<T> Json::Name(absl::string_view key) const {        \
    absl::StatusOr<const Json*> v = Get(key);                        \
    if (!v.ok()) return v.status();                                  \
    absl::StatusOr<T> r = (*v)->As();                                \
    if (!r.ok()) return KeyError(key, r.status());                   \
    return r;                                                        \
  }
TANDEM_JSON_KEY_GETTER_(GetBool, AsBool, bool)
TANDEM_JSON_KEY_GETTER_(GetInt, AsInt, int64_t)
TANDEM_JSON_KEY_GETTER_(GetDouble, AsDouble, double)
TANDEM_JSON_KEY_GETTER_(GetString, AsString, std::string)
TANDEM_JSON_KEY_GETTER_(GetArray, AsArray, const Json::Elements*)
TANDEM_JSON_KEY_GETTER_(GetObject, AsObject, const Json::Members*)
#undef TANDEM_JSON_KEY_GETTER_

absl::StatusOr<const Json*> Json::At(size_t index) const {
  if (!is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat("json: cannot get index ", index,
                     ": expected array, got ", Describe(*this)));
  }
  const Elements& elements = std::get<Elements>(value_);
  if (index >= elements.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("json: index ", index, " out of range for array of size ",
                     elements.size()));
  }
  return &elements[index];
}

absl::StatusOr<const Json*> Json::GetPath(absl::string_view pointer) const {
  if (!pointer.empty() && pointer[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("json: invalid JSON pointer \"", pointer,
                     "\": must be empty or start with '/'"));
  }
  const Json* current = this;
  size_t pos = 0;  // pointer[0, pos) has been resolved
  while (pos < pointer.size()) {
    const size_t next = std::min(pointer.find('/', pos + 1), pointer.size());
    const absl::string_view raw = pointer.substr(pos + 1, next - pos - 1);
    const absl::string_view at = pointer.substr(0, pos);
    std::string token;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '~') {
        token.push_back(raw[i]);
      } else if (i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        token.push_back(raw[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("json: invalid JSON pointer \"", pointer,
                         "\": '~' must be followed by '0' or '1'"));
      }
    }
    absl::StatusOr<const Json*> child;
    if (current->is_object()) {
      child = current->Get(token);
    } else if (current->is_array()) {
      size_t index = 0;
      bool valid = !token.empty() && token.size() <= 18 &&
                   (token == "0" || token[0] != '0');
      for (char c : token) valid = valid && absl::ascii_isdigit(c);
      if (valid) {
        for (char c : token) index = index * 10 + (c - '0');
        child = current->At(index);
      } else {
        child = absl::InvalidArgumentError(
            absl::StrCat("json: invalid array index \"", token, "\""));
      }
    } else {
      child = absl::InvalidArgumentError(
          absl::StrCat("json: cannot descend into ", Describe(*current),
                       ": expected array or object"));
    }
    if (!child.ok()) {
      absl::string_view msg = child.status().message();
      absl::ConsumePrefix(&msg, "json: ");
      return absl::InvalidArgumentError(
          absl::StrCat("json: at \"", at, "\": ", msg));
    }
    current = *child;
    pos = next;
  }
  return current;
}

Json& Json::Set(absl::string_view key, Json value) & {
  if (is_null()) value_.emplace<Members>();
  CHECK(is_object()) << "json: Set(\"" << key << "\") on a "
                     << JsonTypeName(type()) << ", expected object";
  if (Json* existing = Find(key)) {
    *existing = std::move(value);
  } else {
    std::get<Members>(value_).emplace_back(std::string(key), std::move(value));
  }
  return *this;
}

Json&& Json::Set(absl::string_view key, Json value) && {
  return std::move(Set(key, std::move(value)));
}

Json& Json::Push(Json value) & {
  if (is_null()) value_.emplace<Elements>();
  CHECK(is_array()) << "json: Push() on a " << JsonTypeName(type())
                    << ", expected array";
  std::get<Elements>(value_).push_back(std::move(value));
  return *this;
}

Json&& Json::Push(Json value) && { return std::move(Push(std::move(value))); }

bool Json::Erase(absl::string_view key) {
  if (!is_object()) return false;
  Members& members = std::get<Members>(value_);
  for (auto it = members.begin(); it != members.end(); ++it) {
    if (it->first == key) {
      members.erase(it);
      return true;
    }
  }
  return false;
}

size_t Json::size() const {
  if (is_array()) return std::get<Elements>(value_).size();
  if (is_object()) return std::get<Members>(value_).size();
  return 0;
}

std::string Json::Dump(int indent) const { return DumpLibrary(ToLibrary(*this), indent); }

bool operator==(const Json& a, const Json& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Json::Type::kNull: return true;
    case Json::Type::kBool: return a.bool_value() == b.bool_value();
    case Json::Type::kInt: return a.int_value() == b.int_value();
    case Json::Type::kDouble: return a.double_value() == b.double_value();
    case Json::Type::kString: return a.string_value() == b.string_value();
    case Json::Type::kArray: return a.array() == b.array();
    case Json::Type::kObject: break;
  }
  // Keys are unique within an object, so equal sizes plus every member of
  // `a` found equal in `b` means equal.
  const Json::Members& am = a.object();
  const Json::Members& bm = b.object();
  if (am.size() != bm.size()) return false;
  size_t i = 0;
  while (i < am.size() && am[i].first == bm[i].first) {  // same order
    if (am[i].second != bm[i].second) return false;
    ++i;
  }
  if (i == am.size()) return true;
  if (am.size() - i < kHashThreshold) {
    for (; i < am.size(); ++i) {
      const Json* bv = b.Find(am[i].first);
      if (bv == nullptr || *bv != am[i].second) return false;
    }
    return true;
  }
  absl::flat_hash_map<absl::string_view, const Json*> index;
  index.reserve(bm.size());
  for (const Json::Member& m : bm) index.emplace(m.first, &m.second);
  for (; i < am.size(); ++i) {
    auto it = index.find(am[i].first);
    if (it == index.end() || *it->second != am[i].second) return false;
  }
  return true;
}

}  // namespace tandem
