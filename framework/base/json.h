// JSON values with Status-returning accessors; parsing (RFC 8259) and
// writing are nlohmann-json's (Debian's nlohmann-json3-dev, kept out of
// this header).
//
//   ASSIGN_OR_RETURN(Json doc, ParseJson(R"({"name": "mlp", "ops": [1, 2]})"));
//   ASSIGN_OR_RETURN(std::string name, doc.GetString("name"));  // "mlp"
//   ASSIGN_OR_RETURN(const Json* ops, doc.Get("ops"));
//   ASSIGN_OR_RETURN(const Json::Elements* list, ops->AsArray());
//   ASSIGN_OR_RETURN(int64_t first, (*list)[0].AsInt());        // 1
//   ASSIGN_OR_RETURN(const Json* op, doc.GetPath("/ops/1"));     // RFC 6901
//
//   Json out = Json::Object().Set("lr", 0.5).Set("steps", 100);
//   out.Set("tags", Json::Array().Push("a").Push(true));
//   out.Dump();   // {"lr":0.5,"steps":100,"tags":["a",true]}
//   out.Dump(2);  // pretty-printed with two-space indentation
//
// Numbers: integer text (no fraction or exponent) that fits in int64 is kept
// exactly as an int; every other number is a double. Json(1) and Json(1.0)
// are different values (is_int vs is_double); AsDouble() accepts both, and
// AsInt() accepts doubles that hold an integer exactly.
//
// Objects keep insertion order (Dump writes members in that order) and hold
// each key at most once: Set() on an existing key replaces the value in
// place, and when a parsed object repeats a key the last value wins, at the
// position of the first. Key lookup is a linear scan (objects are meant for
// configs and records, not as large maps). Object equality ignores order.
//
// Strings hold UTF-8. The parser rejects invalid UTF-8 and unpaired UTF-16
// surrogates; Dump() writes invalid UTF-8 bytes as U+FFFD. NaN and
// infinities are not JSON: Dump() writes them as null.
//
// Thread safety: Json is a value type. Const methods may run concurrently;
// mutating a value needs external synchronization. ParseJson() is
// thread-safe and never crashes: any input yields a value or an
// InvalidArgument error. Values built in code (not parsed) are not depth
// limited; Dump(), ==, copies and destruction recurse once per level.
#ifndef TANDEM_FRAMEWORK_BASE_JSON_H_
#define TANDEM_FRAMEWORK_BASE_JSON_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem {

class Json {
 public:
  enum class Type { kNull, kBool, kInt, kDouble, kString, kArray, kObject };
  using Elements = std::vector<Json>;
  using Member = std::pair<std::string, Json>;
  using Members = std::vector<Member>;

  // ParseJson() rejects arrays/objects nested deeper than this.
  static constexpr int kMaxDepth = 512;

  // Scalars. Implicit on purpose: Set("k", 3), Push("s"), Json j = true.
  Json() = default;                      // null
  Json(std::nullptr_t) {}                // NOLINT: null
  Json(bool b) : value_(b) {}            // NOLINT
  Json(double d) : value_(d) {}          // NOLINT
  Json(const char* s);                   // NOLINT; a null pointer gives null
  Json(absl::string_view s);             // NOLINT
#ifndef ABSL_USES_STD_STRING_VIEW
  Json(std::string_view s);              // NOLINT
#endif
  Json(std::string s);                   // NOLINT
  // Any integer type except bool. uint64 values above INT64_MAX become
  // doubles (rounded).
  template <typename T,
            typename std::enable_if_t<std::is_integral<T>::value &&
                                          !std::is_same<T, bool>::value,
                                      int> = 0>
  Json(T v) {  // NOLINT
    if constexpr (std::is_unsigned<T>::value &&
                  sizeof(T) >= sizeof(int64_t)) {
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        value_.template emplace<double>(static_cast<double>(v));
        return;
      }
    }
    value_.template emplace<int64_t>(static_cast<int64_t>(v));
  }
  // Other pointers would silently become bool; disallow them.
  Json(const void*) = delete;

  Json(const Json&) = default;
  Json(Json&&) noexcept = default;
  Json& operator=(const Json&) = default;
  Json& operator=(Json&&) noexcept = default;

  static Json Array() { return Json(Elements()); }
  static Json Array(Elements elements) { return Json(std::move(elements)); }
  static Json Object() { return Json(Members()); }
  // A repeated key keeps its first position and its last value.
  static Json Object(Members members);

  // Type queries.
  Type type() const { return static_cast<Type>(value_.index()); }
  bool is_null() const { return type() == Type::kNull; }
  bool is_bool() const { return type() == Type::kBool; }
  bool is_int() const { return type() == Type::kInt; }
  bool is_double() const { return type() == Type::kDouble; }
  bool is_number() const { return is_int() || is_double(); }
  bool is_string() const { return type() == Type::kString; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_object() const { return type() == Type::kObject; }

  // Checked accessors: InvalidArgument "json: expected <type>, got <what>".
  absl::StatusOr<bool> AsBool() const;
  // Ints, and doubles holding an integer exactly within int64 range.
  absl::StatusOr<int64_t> AsInt() const;
  // Ints convert (beyond 2^53 they round).
  absl::StatusOr<double> AsDouble() const;
  absl::StatusOr<std::string> AsString() const;
  // The pointers stay valid while this value lives and is not modified.
  absl::StatusOr<const Elements*> AsArray() const;
  absl::StatusOr<const Members*> AsObject() const;

  // Unchecked accessors for code that already tested the type: they
  // CHECK-fail on a type mismatch. double_value() also accepts ints.
  bool bool_value() const;
  int64_t int_value() const;
  double double_value() const;
  const std::string& string_value() const;
  const Elements& array() const;
  Elements& mutable_array();
  const Members& object() const;

  // Object lookup. Get: InvalidArgument when this is not an object
  // ("json: cannot get key \"ops\": expected object, got array") or the key
  // is missing ("json: key \"ops\" not found; keys: \"a\", \"b\"").
  absl::StatusOr<const Json*> Get(absl::string_view key) const;
  // Get() plus As*(); errors name the key: json: key "lr": expected ...
  absl::StatusOr<bool> GetBool(absl::string_view key) const;
  absl::StatusOr<int64_t> GetInt(absl::string_view key) const;
  absl::StatusOr<double> GetDouble(absl::string_view key) const;
  absl::StatusOr<std::string> GetString(absl::string_view key) const;
  absl::StatusOr<const Elements*> GetArray(absl::string_view key) const;
  absl::StatusOr<const Members*> GetObject(absl::string_view key) const;
  // nullptr when this is not an object or has no such key.
  const Json* Find(absl::string_view key) const;
  Json* Find(absl::string_view key);
  bool Has(absl::string_view key) const { return Find(key) != nullptr; }

  // Array element; InvalidArgument when not an array or out of range.
  absl::StatusOr<const Json*> At(size_t index) const;

  // RFC 6901 JSON Pointer: "" is this value, "/a/0/b~1c" is
  // this["a"][0]["b/c"]. Errors name the prefix that resolved:
  // json: at "/a/0": key "b/c" not found.
  absl::StatusOr<const Json*> GetPath(absl::string_view pointer) const;

  // Mutators. A null value first becomes an empty object (Set) or array
  // (Push); any other type CHECK-fails. Both return *this for chaining.
  Json& Set(absl::string_view key, Json value) &;
  Json&& Set(absl::string_view key, Json value) &&;
  Json& Push(Json value) &;
  Json&& Push(Json value) &&;
  // Removes `key` from an object; false if absent or not an object.
  bool Erase(absl::string_view key);

  // Elements of an array or members of an object; 0 for anything else.
  size_t size() const;

  // Compact when indent < 0 ({"a":[1,2]}), otherwise one element or member
  // per line indented by `indent` spaces per level and ": " after keys.
  // Doubles print so that they read back bit for bit, always with a '.' or
  // an exponent (2.0, 1e+300), so ParseJson(x.Dump()) == x for finite
  // values; NaN and +-Inf print as null.
  std::string Dump(int indent = -1) const;

  // Types must match exactly (int 1 != double 1.0; doubles use ==, so NaN
  // is unequal to itself); arrays compare in order, objects by key set.
  friend bool operator==(const Json& a, const Json& b);
  friend bool operator!=(const Json& a, const Json& b) { return !(a == b); }
  friend std::ostream& operator<<(std::ostream& os, const Json& j) {
    return os << j.Dump();
  }

 private:
  explicit Json(Elements elements) : value_(std::move(elements)) {}
  explicit Json(Members members) : value_(std::move(members)) {}

  // Alternative order matches Type.
  std::variant<std::monostate, bool, int64_t, double, std::string, Elements,
               Members>
      value_;
};

// "null", "bool", "int", "double", "string", "array", "object".
absl::string_view JsonTypeName(Json::Type type);

// Parses one RFC 8259 JSON text (any value at the top level, surrounding
// whitespace allowed, a leading UTF-8 byte order mark ignored). Errors are
// InvalidArgument "json: line L, column C: <nlohmann-json's diagnosis>",
// e.g. "json: line 1, column 4: syntax error while parsing array -
// unexpected number literal; expected ']'", where C counts bytes from 1 and
// is the byte at which parsing stopped (an unexpected token's last byte, or
// the end of input). Arrays and objects may nest Json::kMaxDepth deep.
absl::StatusOr<Json> ParseJson(absl::string_view text);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_BASE_JSON_H_
