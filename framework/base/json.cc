#include "framework/base/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <system_error>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "framework/base/status_macros.h"
#include "glog/logging.h"

namespace tandem {
namespace {

constexpr size_t kMaxKeysInError = 10;
constexpr size_t kMaxStringInError = 32;
// Objects at least this large use a hash map to find duplicate keys while
// parsing and to compare members in ==; smaller ones scan linearly.
constexpr size_t kHashThreshold = 16;

// ---------------------------------------------------------------------------
// Writing.

void AppendQuoted(absl::string_view s, std::string* out);

// A short description of `j` for error messages: `string "abc"`, `int 5`,
// `double 0.5`, `array (3 elements)`.
std::string Describe(const Json& j) {
  switch (j.type()) {
    case Json::Type::kNull: return "null";
    case Json::Type::kBool: return j.bool_value() ? "bool true" : "bool false";
    case Json::Type::kInt: return absl::StrCat("int ", j.int_value());
    case Json::Type::kDouble:
      // Dump() would print NaN and infinities as null.
      return std::isfinite(j.double_value())
                 ? absl::StrCat("double ", j.Dump())
                 : absl::StrCat("double ", j.double_value());
    case Json::Type::kString: {
      const std::string& s = j.string_value();
      std::string out = "string ";
      if (s.size() <= kMaxStringInError) {
        AppendQuoted(s, &out);
      } else {
        AppendQuoted(s.substr(0, kMaxStringInError), &out);
        out += "...";
      }
      return out;
    }
    case Json::Type::kArray:
      return absl::StrCat("array (", j.size(), " elements)");
    case Json::Type::kObject:
      return absl::StrCat("object (", j.size(), " members)");
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
  std::string quoted;
  AppendQuoted(key, &quoted);
  return absl::Status(s.code(),
                      absl::StrCat("json: key ", quoted, ": ", msg));
}

// Length of the valid UTF-8 sequence at s[i] (1..4), or 0 if invalid
// (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
int Utf8SequenceLength(absl::string_view s, size_t i) {
  const auto byte = [&](size_t k) {
    return static_cast<unsigned char>(s[k]);
  };
  const unsigned char c0 = byte(i);
  if (c0 < 0x80) return 1;
  int len;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (c0 < 0xC2) {
    return 0;  // continuation byte or overlong 2-byte lead
  } else if (c0 < 0xE0) {
    len = 2;
  } else if (c0 < 0xF0) {
    len = 3;
    if (c0 == 0xE0) lo = 0xA0;  // overlong
    if (c0 == 0xED) hi = 0x9F;  // UTF-16 surrogates
  } else if (c0 < 0xF5) {
    len = 4;
    if (c0 == 0xF0) lo = 0x90;  // overlong
    if (c0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (int k = 2; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return len;
}

void AppendQuoted(absl::string_view s, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const int len = Utf8SequenceLength(s, i);
      if (len == 0) {
        out->append("\xEF\xBF\xBD");  // U+FFFD replacement character
        ++i;
      } else {
        out->append(s.data() + i, len);
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", c);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out->push_back('"');
}

void AppendDouble(double d, std::string* out) {
  if (!std::isfinite(d)) {
    out->append("null");
    return;
  }
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), d);
  CHECK(r.ec == std::errc()) << "to_chars failed for " << d;
  const absl::string_view text(buf, r.ptr - buf);
  out->append(text.data(), text.size());
  // Keep it a double when re-parsed: "2" -> "2.0". ("1e+20" already is.)
  if (text.find_first_of(".eE") == absl::string_view::npos) {
    out->append(".0");
  }
}

void AppendNewline(int indent, int level, std::string* out) {
  out->push_back('\n');
  out->append(static_cast<size_t>(indent) * level, ' ');
}

void DumpTo(const Json& j, int indent, int level, std::string* out) {
  switch (j.type()) {
    case Json::Type::kNull: out->append("null"); return;
    case Json::Type::kBool: out->append(j.bool_value() ? "true" : "false");
      return;
    case Json::Type::kInt: absl::StrAppend(out, j.int_value()); return;
    case Json::Type::kDouble: AppendDouble(j.double_value(), out); return;
    case Json::Type::kString: AppendQuoted(j.string_value(), out); return;
    case Json::Type::kArray: {
      const Json::Elements& elements = j.array();
      out->push_back('[');
      for (size_t i = 0; i < elements.size(); ++i) {
        if (i > 0) out->push_back(',');
        if (indent >= 0) AppendNewline(indent, level + 1, out);
        DumpTo(elements[i], indent, level + 1, out);
      }
      if (indent >= 0 && !elements.empty()) AppendNewline(indent, level, out);
      out->push_back(']');
      return;
    }
    case Json::Type::kObject: {
      const Json::Members& members = j.object();
      out->push_back('{');
      for (size_t i = 0; i < members.size(); ++i) {
        if (i > 0) out->push_back(',');
        if (indent >= 0) AppendNewline(indent, level + 1, out);
        AppendQuoted(members[i].first, out);
        out->append(indent >= 0 ? ": " : ":");
        DumpTo(members[i].second, indent, level + 1, out);
      }
      if (indent >= 0 && !members.empty()) AppendNewline(indent, level, out);
      out->push_back('}');
      return;
    }
  }
}

// ---------------------------------------------------------------------------
// Parsing.

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

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

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<Json> Parse() {
    if (absl::StartsWith(text_, "\xEF\xBB\xBF")) pos_ = 3;  // UTF-8 BOM
    Json root;
    RETURN_IF_ERROR(ParseValue(&root, 0));
    SkipWhitespace();
    if (pos_ != text_.size()) {
      return Error(pos_,
                   absl::StrCat("expected end of input after the top-level "
                                "value, got ",
                                Here()));
    }
    return root;
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }

  void SkipWhitespace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      ++pos_;
    }
  }

  // The character at `pos` for messages: 'x', byte 0x07, end of input.
  std::string CharAt(size_t pos) const {
    if (pos >= text_.size()) return "end of input";
    const unsigned char c = static_cast<unsigned char>(text_[pos]);
    if (c >= 0x20 && c < 0x7F) return absl::StrCat("'", std::string(1, c), "'");
    return absl::StrFormat("byte 0x%02X", c);
  }
  std::string Here() const { return CharAt(pos_); }

  absl::Status Error(size_t pos, absl::string_view what) const {
    pos = std::min(pos, text_.size());
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < pos; ++i) {
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "json: line ", line, ", column ", pos - line_start + 1, ": ", what));
  }

  absl::Status ParseValue(Json* out, int depth) {
    SkipWhitespace();
    if (AtEnd()) return Error(pos_, "expected a value, got end of input");
    switch (Peek()) {
      case '{':
      case '[':
        if (depth >= Json::kMaxDepth) {
          return Error(pos_, absl::StrCat("nesting depth exceeds ",
                                          Json::kMaxDepth));
        }
        return Peek() == '{' ? ParseObject(out, depth) : ParseArray(out, depth);
      case '"': {
        std::string s;
        RETURN_IF_ERROR(ParseString(&s));
        *out = Json(std::move(s));
        return absl::OkStatus();
      }
      case 't': return ParseLiteral("true", Json(true), out);
      case 'f': return ParseLiteral("false", Json(false), out);
      case 'n': return ParseLiteral("null", Json(), out);
      default:
        if (Peek() == '-' || IsDigit(Peek())) return ParseNumber(out);
        return Error(pos_, absl::StrCat("expected a value, got ", Here()));
    }
  }

  absl::Status ParseLiteral(absl::string_view word, Json value, Json* out) {
    if (text_.substr(pos_, word.size()) != word) {
      return Error(pos_, absl::StrCat("invalid literal; expected '", word, "'"));
    }
    pos_ += word.size();
    *out = std::move(value);
    return absl::OkStatus();
  }

  absl::Status ParseArray(Json* out, int depth) {
    ++pos_;  // '['
    *out = Json::Array();
    Json::Elements& elements = out->mutable_array();
    SkipWhitespace();
    if (!AtEnd() && Peek() == ']') {
      ++pos_;
      return absl::OkStatus();
    }
    while (true) {
      elements.emplace_back();
      RETURN_IF_ERROR(ParseValue(&elements.back(), depth + 1));
      SkipWhitespace();
      if (AtEnd()) {
        return Error(pos_,
                     "expected ',' or ']' after array element, got end of "
                     "input");
      }
      if (Peek() == ']') {
        ++pos_;
        return absl::OkStatus();
      }
      if (Peek() != ',') {
        return Error(pos_, absl::StrCat("expected ',' or ']' after array "
                                        "element, got ",
                                        Here()));
      }
      ++pos_;
      SkipWhitespace();
      if (!AtEnd() && Peek() == ']') return Error(pos_, "trailing comma in array");
    }
  }

  absl::Status ParseObject(Json* out, int depth) {
    ++pos_;  // '{'
    Json::Members members;
    SkipWhitespace();
    if (!AtEnd() && Peek() == '}') {
      ++pos_;
      *out = Json::Object();
      return absl::OkStatus();
    }
    while (true) {
      if (AtEnd() || Peek() != '"') {
        return Error(pos_, absl::StrCat(members.empty()
                                            ? "expected string key or '}'"
                                            : "expected string key after ','",
                                        " in object, got ", Here()));
      }
      std::string key;
      RETURN_IF_ERROR(ParseString(&key));
      SkipWhitespace();
      if (AtEnd() || Peek() != ':') {
        return Error(pos_, absl::StrCat("expected ':' after object key, got ",
                                        Here()));
      }
      ++pos_;
      members.emplace_back(std::move(key), Json());
      RETURN_IF_ERROR(ParseValue(&members.back().second, depth + 1));
      SkipWhitespace();
      if (!AtEnd() && Peek() == '}') {
        ++pos_;
        break;
      }
      if (AtEnd() || Peek() != ',') {
        return Error(pos_, absl::StrCat("expected ',' or '}' after object "
                                        "member, got ",
                                        Here()));
      }
      ++pos_;
      SkipWhitespace();
      if (!AtEnd() && Peek() == '}') {
        return Error(pos_, "trailing comma in object");
      }
    }
    *out = Json::Object(std::move(members));
    return absl::OkStatus();
  }

  // Reads 4 hex digits at `pos`; -1 if they are not there.
  int32_t Hex4(size_t pos) const {
    if (pos + 4 > text_.size()) return -1;
    int32_t v = 0;
    for (size_t i = pos; i < pos + 4; ++i) {
      const int h = HexValue(text_[i]);
      if (h < 0) return -1;
      v = v * 16 + h;
    }
    return v;
  }

  absl::Status ParseString(std::string* out) {
    const size_t open = pos_;
    ++pos_;  // '"'
    while (true) {
      // Copy a run of plain ASCII at once.
      const size_t run = pos_;
      while (pos_ < text_.size()) {
        const unsigned char c = static_cast<unsigned char>(text_[pos_]);
        if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') break;
        ++pos_;
      }
      out->append(text_.data() + run, pos_ - run);
      if (AtEnd()) return Error(open, "unterminated string");
      const unsigned char c = static_cast<unsigned char>(Peek());
      if (c == '"') {
        ++pos_;
        return absl::OkStatus();
      }
      if (c == '\\') {
        RETURN_IF_ERROR(ParseEscape(open, out));
        continue;
      }
      if (c < 0x20) {
        return Error(pos_, absl::StrFormat("unescaped control character "
                                           "0x%02X in string",
                                           c));
      }
      const int len = Utf8SequenceLength(text_, pos_);
      if (len == 0) return Error(pos_, "invalid UTF-8 in string");
      out->append(text_.data() + pos_, len);
      pos_ += len;
    }
  }

  // At a backslash inside the string opened at `open`.
  absl::Status ParseEscape(size_t open, std::string* out) {
    const size_t start = pos_;
    if (pos_ + 1 >= text_.size()) return Error(open, "unterminated string");
    const char e = text_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case '"': out->push_back('"'); return absl::OkStatus();
      case '\\': out->push_back('\\'); return absl::OkStatus();
      case '/': out->push_back('/'); return absl::OkStatus();
      case 'b': out->push_back('\b'); return absl::OkStatus();
      case 'f': out->push_back('\f'); return absl::OkStatus();
      case 'n': out->push_back('\n'); return absl::OkStatus();
      case 'r': out->push_back('\r'); return absl::OkStatus();
      case 't': out->push_back('\t'); return absl::OkStatus();
      case 'u': break;
      default:
        if (e >= 0x20 && e < 0x7F) {
          return Error(start,
                       absl::StrCat("invalid escape '\\", std::string(1, e),
                                    "' in string"));
        }
        return Error(start, absl::StrCat("invalid escape: '\\' followed by ",
                                         CharAt(start + 1), " in string"));
    }
    const int32_t unit = Hex4(pos_);
    if (unit < 0) {
      return Error(start, "invalid \\u escape: expected 4 hex digits");
    }
    pos_ += 4;
    uint32_t cp = static_cast<uint32_t>(unit);
    if (cp >= 0xDC00 && cp <= 0xDFFF) {
      return Error(start, absl::StrFormat(
                              "unpaired UTF-16 surrogate \\u%04X in string",
                              cp));
    }
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      const int32_t low = (text_.substr(pos_, 2) == "\\u") ? Hex4(pos_ + 2) : -1;
      if (low < 0xDC00 || low > 0xDFFF) {
        return Error(start, absl::StrFormat(
                                "unpaired UTF-16 surrogate \\u%04X in string",
                                cp));
      }
      pos_ += 6;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(low) - 0xDC00);
    }
    AppendUtf8(cp, out);
    return absl::OkStatus();
  }

  absl::Status ParseNumber(Json* out) {
    const size_t start = pos_;
    const bool negative = Peek() == '-';
    if (negative) ++pos_;
    if (AtEnd() || !IsDigit(Peek())) {
      return Error(pos_, absl::StrCat("expected a digit after '-', got ",
                                      Here()));
    }
    const size_t int_start = pos_;
    if (Peek() == '0') {
      ++pos_;
      if (!AtEnd() && IsDigit(Peek())) {
        return Error(start, "leading zeros are not allowed in numbers");
      }
    } else {
      while (!AtEnd() && IsDigit(Peek())) ++pos_;
    }
    const size_t int_end = pos_;
    size_t frac_start = pos_, frac_end = pos_;
    bool is_integer = true;
    if (!AtEnd() && Peek() == '.') {
      ++pos_;
      if (AtEnd() || !IsDigit(Peek())) {
        return Error(pos_, absl::StrCat("expected a digit after the decimal "
                                        "point, got ",
                                        Here()));
      }
      frac_start = pos_;
      while (!AtEnd() && IsDigit(Peek())) ++pos_;
      frac_end = pos_;
      is_integer = false;
    }
    int64_t exponent = 0;  // clamped; only its rough size matters
    if (!AtEnd() && (Peek() == 'e' || Peek() == 'E')) {
      ++pos_;
      bool exponent_negative = false;
      if (!AtEnd() && (Peek() == '+' || Peek() == '-')) {
        exponent_negative = Peek() == '-';
        ++pos_;
      }
      if (AtEnd() || !IsDigit(Peek())) {
        return Error(pos_, absl::StrCat("expected a digit in the exponent, "
                                        "got ",
                                        Here()));
      }
      while (!AtEnd() && IsDigit(Peek())) {
        if (exponent < 1000000000) exponent = exponent * 10 + (Peek() - '0');
        ++pos_;
      }
      if (exponent_negative) exponent = -exponent;
      is_integer = false;
    }
    const absl::string_view token = text_.substr(start, pos_ - start);

    if (is_integer) {
      // Accumulate negatively so INT64_MIN fits.
      int64_t v = 0;
      bool overflow = false;
      for (size_t i = int_start; i < int_end && !overflow; ++i) {
        overflow = __builtin_mul_overflow(v, 10, &v) ||
                   __builtin_sub_overflow(v, text_[i] - '0', &v);
      }
      if (!overflow && !negative) overflow = __builtin_mul_overflow(v, -1, &v);
      if (!overflow) {
        *out = Json(v);
        return absl::OkStatus();
      }
    }

    double d = 0;
    const std::from_chars_result r =
        std::from_chars(token.data(), token.data() + token.size(), d);
    if (r.ec == std::errc::result_out_of_range) {
      // Overflow or underflow? Find the decimal magnitude of the first
      // nonzero digit (a value this far out of range is unambiguous).
      int64_t magnitude = 0;
      bool found = false;
      for (size_t i = int_start; i < int_end && !found; ++i) {
        if (text_[i] != '0') {
          magnitude = static_cast<int64_t>(int_end - i) - 1;
          found = true;
        }
      }
      for (size_t i = frac_start; i < frac_end && !found; ++i) {
        if (text_[i] != '0') {
          magnitude = -static_cast<int64_t>(i - frac_start) - 1;
          found = true;
        }
      }
      if (found && magnitude + exponent > 0) {
        return Error(start, "number out of range for a double");
      }
      d = negative ? -0.0 : 0.0;
    } else if (r.ec != std::errc() || r.ptr != token.data() + token.size() ||
               !std::isfinite(d)) {
      return Error(start, "number out of range for a double");
    }
    *out = Json(d);
    return absl::OkStatus();
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

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
  std::string quoted;
  if (!is_object()) {
    AppendQuoted(key, &quoted);
    return absl::InvalidArgumentError(
        absl::StrCat("json: cannot get key ", quoted, ": expected object, got ",
                     Describe(*this)));
  }
  if (const Json* v = Find(key)) return v;
  AppendQuoted(key, &quoted);
  std::string msg = absl::StrCat("json: key ", quoted, " not found; keys: ");
  const Members& members = std::get<Members>(value_);
  if (members.empty()) msg += "(none)";
  for (size_t i = 0; i < members.size() && i < kMaxKeysInError; ++i) {
    if (i > 0) msg += ", ";
    AppendQuoted(members[i].first, &msg);
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
      for (char c : token) valid = valid && IsDigit(c);
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

std::string Json::Dump(int indent) const {
  std::string out;
  DumpTo(*this, indent, 0, &out);
  return out;
}

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

absl::StatusOr<Json> ParseJson(absl::string_view text) {
  return Parser(text).Parse();
}

}  // namespace tandem
