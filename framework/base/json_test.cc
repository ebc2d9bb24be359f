#include "framework/base/json.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "framework/testing/status_matchers.h"
#include "glog/logging.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;

constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

// The error message ParseJson gives for `text`, or "OK".
std::string ParseError(absl::string_view text) {
  absl::StatusOr<Json> j = ParseJson(text);
  if (j.ok()) return "OK";
  EXPECT_EQ(j.status().code(), kInvalid) << j.status();
  return std::string(j.status().message());
}

Json MustParse(absl::string_view text) {
  absl::StatusOr<Json> j = ParseJson(text);
  CHECK(j.ok()) << j.status() << " for " << text;
  return *std::move(j);
}

// ParseJson(Dump(j)) == j for compact and pretty output.
void ExpectRoundTrip(const Json& j) {
  for (int indent : {-1, 0, 2}) {
    const std::string text = j.Dump(indent);
    absl::StatusOr<Json> back = ParseJson(text);
    ASSERT_OK(back) << text;
    EXPECT_EQ(*back, j) << text;
    EXPECT_EQ(back->Dump(indent), text);
  }
}

TEST(Json, ConstructorsAndTypes) {
  EXPECT_TRUE(Json().is_null());
  EXPECT_TRUE(Json(nullptr).is_null());
  EXPECT_TRUE(Json(true).is_bool());
  EXPECT_TRUE(Json(3).is_int());
  EXPECT_TRUE(Json(int64_t{3}).is_int());
  EXPECT_TRUE(Json(3u).is_int());
  EXPECT_TRUE(Json(uint64_t{3}).is_int());
  EXPECT_TRUE(Json(std::numeric_limits<uint64_t>::max()).is_double());
  EXPECT_TRUE(Json(3.0).is_double());
  EXPECT_TRUE(Json(3.0f).is_double());
  EXPECT_TRUE(Json(3).is_number());
  EXPECT_TRUE(Json(3.5).is_number());
  EXPECT_TRUE(Json("s").is_string());
  EXPECT_TRUE(Json(std::string("s")).is_string());
  EXPECT_TRUE(Json(absl::string_view("s")).is_string());
  EXPECT_TRUE(Json(std::string_view("s")).is_string());
  EXPECT_TRUE(Json(static_cast<const char*>(nullptr)).is_null());
  EXPECT_TRUE(Json::Array().is_array());
  EXPECT_TRUE(Json::Object().is_object());
  EXPECT_EQ(Json(3).type(), Json::Type::kInt);
  EXPECT_EQ(JsonTypeName(Json::Type::kDouble), "double");
  EXPECT_EQ(Json::Array({1, "a", true}).Dump(), R"([1,"a",true])");
  EXPECT_EQ(Json::Object({{"b", 1}, {"a", 2}, {"b", 3}}).Dump(),
            R"({"b":3,"a":2})");
}

TEST(Json, CheckedAccessors) {
  EXPECT_THAT(Json(true).AsBool(), IsOkAndHolds(true));
  EXPECT_THAT(Json(7).AsInt(), IsOkAndHolds(7));
  EXPECT_THAT(Json(7.0).AsInt(), IsOkAndHolds(7));
  EXPECT_THAT(Json(-9223372036854775808.0).AsInt(),
              IsOkAndHolds(std::numeric_limits<int64_t>::min()));
  EXPECT_THAT(Json(7).AsDouble(), IsOkAndHolds(7.0));
  EXPECT_THAT(Json(7.5).AsDouble(), IsOkAndHolds(7.5));
  EXPECT_THAT(Json("x").AsString(), IsOkAndHolds("x"));

  EXPECT_THAT(Json(7.5).AsInt(),
              StatusIs(kInvalid, "json: expected int, got double 7.5"));
  EXPECT_THAT(Json(9223372036854775808.0).AsInt(),
              StatusIs(kInvalid, HasSubstr("expected int, got double")));
  EXPECT_THAT(Json(std::nan("")).AsInt(),
              StatusIs(kInvalid, "json: expected int, got double nan"));
  EXPECT_THAT(Json(-std::numeric_limits<double>::infinity()).AsString(),
              StatusIs(kInvalid, "json: expected string, got double -inf"));
  EXPECT_THAT(Json("7").AsInt(),
              StatusIs(kInvalid, "json: expected int, got string \"7\""));
  EXPECT_THAT(Json(true).AsDouble(),
              StatusIs(kInvalid, "json: expected number, got bool true"));
  EXPECT_THAT(Json().AsString(),
              StatusIs(kInvalid, "json: expected string, got null"));
  EXPECT_THAT(Json(1).AsBool(),
              StatusIs(kInvalid, "json: expected bool, got int 1"));
  EXPECT_THAT(Json::Object().AsArray(),
              StatusIs(kInvalid, "json: expected array, got object (0 members)"));
  EXPECT_THAT(Json::Array({1, 2}).AsObject(),
              StatusIs(kInvalid, "json: expected object, got array (2 elements)"));
  EXPECT_THAT(Json(std::string(100, 'x')).AsInt(),
              StatusIs(kInvalid, absl::StrCat("json: expected int, got string \"",
                                              std::string(32, 'x'), "\"...")));

  Json arr = Json::Array({1, 2});
  ASSERT_OK_AND_ASSIGN(const Json::Elements* elements, arr.AsArray());
  EXPECT_EQ(elements, &arr.array());
  EXPECT_THAT(*elements, ElementsAre(Json(1), Json(2)));
}

TEST(Json, ObjectLookupAndErrorsNameTheKey) {
  const Json doc = MustParse(R"({"name": "mlp", "lr": 0.5, "steps": 10,
                                 "ops": [{"type": "matmul"}], "on": true,
                                 "cfg": {}})");
  ASSERT_OK_AND_ASSIGN(const Json* ops, doc.Get("ops"));
  EXPECT_TRUE(ops->is_array());
  EXPECT_THAT(doc.GetString("name"), IsOkAndHolds("mlp"));
  EXPECT_THAT(doc.GetDouble("lr"), IsOkAndHolds(0.5));
  EXPECT_THAT(doc.GetDouble("steps"), IsOkAndHolds(10.0));
  EXPECT_THAT(doc.GetInt("steps"), IsOkAndHolds(10));
  EXPECT_THAT(doc.GetBool("on"), IsOkAndHolds(true));
  ASSERT_OK_AND_ASSIGN(const Json::Elements* list, doc.GetArray("ops"));
  EXPECT_EQ(list->size(), 1u);
  ASSERT_OK_AND_ASSIGN(const Json::Members* cfg, doc.GetObject("cfg"));
  EXPECT_TRUE(cfg->empty());

  EXPECT_THAT(doc.Get("opz"),
              StatusIs(kInvalid, "json: key \"opz\" not found; keys: \"name\", "
                                 "\"lr\", \"steps\", \"ops\", \"on\", \"cfg\""));
  EXPECT_THAT(Json::Object().Get("a"),
              StatusIs(kInvalid, "json: key \"a\" not found; keys: (none)"));
  EXPECT_THAT(doc.GetInt("lr"),
              StatusIs(kInvalid, "json: key \"lr\": expected int, got double 0.5"));
  EXPECT_THAT(doc.GetString("steps"),
              StatusIs(kInvalid, "json: key \"steps\": expected string, got int 10"));
  EXPECT_THAT(doc.GetBool("missing"),
              StatusIs(kInvalid, HasSubstr("key \"missing\" not found")));
  EXPECT_THAT(Json(3).Get("ops"),
              StatusIs(kInvalid,
                       "json: cannot get key \"ops\": expected object, got int 3"));
  EXPECT_THAT(Json(3).GetInt("ops"),
              StatusIs(kInvalid, HasSubstr("expected object, got int 3")));

  Json big = Json::Object();
  for (int i = 0; i < 12; ++i) big.Set(absl::StrCat("k", i), i);
  EXPECT_THAT(big.Get("x"), StatusIs(kInvalid, HasSubstr("\"k9\", ... (12 in all)")));

  EXPECT_TRUE(doc.Has("lr"));
  EXPECT_FALSE(doc.Has("LR"));
  EXPECT_FALSE(Json(1).Has("lr"));
  EXPECT_EQ(doc.Find("nope"), nullptr);
  EXPECT_EQ(doc.size(), 6u);
  EXPECT_EQ(Json("abc").size(), 0u);
}

TEST(Json, ArrayAt) {
  const Json a = Json::Array({"x", "y"});
  EXPECT_THAT(a.At(1), IsOkAndHolds(::testing::Pointee(Json("y"))));
  EXPECT_THAT(a.At(2),
              StatusIs(kInvalid, "json: index 2 out of range for array of size 2"));
  EXPECT_THAT(Json::Object().At(0),
              StatusIs(kInvalid, "json: cannot get index 0: expected array, "
                                 "got object (0 members)"));
}

TEST(Json, GetPath) {
  const Json doc = MustParse(R"({"a": [10, {"b/c": 1, "d~e": 2, "": 3}],
                                 "n": null})");
  EXPECT_THAT(doc.GetPath(""), IsOkAndHolds(&doc));
  EXPECT_THAT(doc.GetPath("/a/0"), IsOkAndHolds(::testing::Pointee(Json(10))));
  EXPECT_THAT(doc.GetPath("/a/1/b~1c"), IsOkAndHolds(::testing::Pointee(Json(1))));
  EXPECT_THAT(doc.GetPath("/a/1/d~0e"), IsOkAndHolds(::testing::Pointee(Json(2))));
  EXPECT_THAT(doc.GetPath("/a/1/"), IsOkAndHolds(::testing::Pointee(Json(3))));
  EXPECT_THAT(doc.GetPath("/n"), IsOkAndHolds(::testing::Pointee(Json())));

  EXPECT_THAT(doc.GetPath("/a/1/x"),
              StatusIs(kInvalid, HasSubstr("json: at \"/a/1\": key \"x\" not found")));
  EXPECT_THAT(doc.GetPath("/a/2"),
              StatusIs(kInvalid, "json: at \"/a\": index 2 out of range for "
                                 "array of size 2"));
  EXPECT_THAT(doc.GetPath("/a/01"),
              StatusIs(kInvalid, "json: at \"/a\": invalid array index \"01\""));
  EXPECT_THAT(doc.GetPath("/a/-"), StatusIs(kInvalid, HasSubstr("invalid array index")));
  EXPECT_THAT(doc.GetPath("/a/99999999999999999999999"),
              StatusIs(kInvalid, HasSubstr("invalid array index")));
  EXPECT_THAT(doc.GetPath("/a/0/x"),
              StatusIs(kInvalid, "json: at \"/a/0\": cannot descend into int 10: "
                                 "expected array or object"));
  EXPECT_THAT(doc.GetPath("a"), StatusIs(kInvalid, HasSubstr("must be empty or "
                                                             "start with '/'")));
  EXPECT_THAT(doc.GetPath("/a~2"), StatusIs(kInvalid, HasSubstr("'~' must be")));
}

TEST(Json, Mutators) {
  Json obj = Json::Object().Set("b", 1).Set("a", 2);
  obj.Set("b", "replaced");  // keeps position
  obj.Set("c", Json::Array().Push(1).Push(Json::Object().Set("x", nullptr)));
  EXPECT_EQ(obj.Dump(), R"({"b":"replaced","a":2,"c":[1,{"x":null}]})");
  EXPECT_EQ(obj.size(), 3u);
  EXPECT_TRUE(obj.Erase("a"));
  EXPECT_FALSE(obj.Erase("a"));
  EXPECT_EQ(obj.Dump(), R"({"b":"replaced","c":[1,{"x":null}]})");

  Json from_null;
  from_null.Set("k", 1);
  EXPECT_TRUE(from_null.is_object());
  Json list;
  list.Push(1).Push(2);
  EXPECT_EQ(list.Dump(), "[1,2]");
  list.mutable_array()[0] = "one";
  EXPECT_EQ(list.Dump(), R"(["one",2])");

  Json* found = obj.Find("b");
  ASSERT_NE(found, nullptr);
  *found = 5;
  EXPECT_THAT(obj.GetInt("b"), IsOkAndHolds(5));
}

TEST(JsonDeathTest, MutatorsOnWrongTypeCheckFail) {
  EXPECT_DEATH(Json(1).Set("a", 1), "Set\\(\"a\"\\) on a int, expected object");
  EXPECT_DEATH(Json::Object().Push(1), "Push\\(\\) on a object");
  EXPECT_DEATH(Json("s").int_value(), "expected int, got string");
}

TEST(Json, EqualityIsStrictOnNumberKindAndIgnoresObjectOrder) {
  EXPECT_EQ(Json(1), Json(1));
  EXPECT_NE(Json(1), Json(1.0));
  EXPECT_NE(Json(1), Json("1"));
  EXPECT_NE(Json(), Json(false));
  EXPECT_EQ(MustParse(R"({"a":1,"b":[1,2]})"), MustParse(R"({"b":[1,2],"a":1})"));
  EXPECT_NE(MustParse(R"({"a":1,"b":[1,2]})"), MustParse(R"({"b":[2,1],"a":1})"));
  EXPECT_NE(MustParse(R"({"a":1})"), MustParse(R"({"a":1,"b":2})"));
  EXPECT_NE(MustParse(R"({"a":1,"c":2})"), MustParse(R"({"a":1,"b":2})"));
  EXPECT_NE(MustParse("[1,2]"), MustParse("[1,2,3]"));

  // Large objects in different orders (hash path).
  Json x = Json::Object(), y = Json::Object();
  for (int i = 0; i < 100; ++i) {
    x.Set(absl::StrCat("k", i), i);
    y.Set(absl::StrCat("k", 99 - i), 99 - i);
  }
  EXPECT_EQ(x, y);
  y.Set("k50", -1);
  EXPECT_NE(x, y);
}

TEST(Json, ParsesScalars) {
  EXPECT_EQ(MustParse("null"), Json());
  EXPECT_EQ(MustParse("true"), Json(true));
  EXPECT_EQ(MustParse(" \t\r\nfalse \n"), Json(false));
  EXPECT_EQ(MustParse("0"), Json(0));
  EXPECT_EQ(MustParse("-0"), Json(0));
  EXPECT_EQ(MustParse("42"), Json(42));
  EXPECT_EQ(MustParse("-42"), Json(-42));
  EXPECT_EQ(MustParse("1.5"), Json(1.5));
  EXPECT_EQ(MustParse("-0.25"), Json(-0.25));
  EXPECT_EQ(MustParse("1e3"), Json(1000.0));
  EXPECT_EQ(MustParse("1E+3"), Json(1000.0));
  EXPECT_EQ(MustParse("2.5e-3"), Json(0.0025));
  EXPECT_EQ(MustParse("0.0"), Json(0.0));
  EXPECT_EQ(MustParse("\"hi\""), Json("hi"));
  EXPECT_EQ(MustParse("\xEF\xBB\xBF[1]"), Json::Array({1}));  // BOM skipped
  EXPECT_TRUE(std::signbit(MustParse("-0.0").double_value()));
  // Underflow rounds to zero; overflow is an error.
  EXPECT_EQ(MustParse("1e-400"), Json(0.0));
  EXPECT_EQ(MustParse("-0.0000001e-400"), Json(-0.0));
  EXPECT_EQ(MustParse("5e-324"), Json(5e-324));
  EXPECT_EQ(MustParse("1.7976931348623157e308"),
            Json(std::numeric_limits<double>::max()));
  // Positions: the byte where the parser stopped (here a number's last).
  EXPECT_EQ(ParseError("1e309"), "json: line 1, column 5: number overflow parsing '1e309'");
  EXPECT_EQ(ParseError("[-123456789e999999999999999]"),
            "json: line 1, column 27: number overflow parsing '-123456789e999999999999999'");
  EXPECT_EQ(MustParse("0.00000000001e-99999999999999"), Json(0.0));
}

TEST(Json, Int64Extremes) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  const int64_t min = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(MustParse("9223372036854775807"), Json(max));
  EXPECT_EQ(MustParse("-9223372036854775808"), Json(min));
  EXPECT_EQ(Json(max).Dump(), "9223372036854775807");
  EXPECT_EQ(Json(min).Dump(), "-9223372036854775808");
  // One past either end no longer fits: a double.
  EXPECT_EQ(MustParse("9223372036854775808"), Json(9223372036854775808.0));
  EXPECT_EQ(MustParse("-9223372036854775809"), Json(-9223372036854775808.0));
  EXPECT_EQ(MustParse("123456789012345678901234567890"), Json(1.2345678901234568e29));
  // 2^53 + 1 survives as an int (it would not as a double).
  EXPECT_THAT(MustParse("9007199254740993").AsInt(),
              IsOkAndHolds(int64_t{9007199254740993}));
  ExpectRoundTrip(Json::Array({max, min, 0, -1, 9007199254740993}));
}

TEST(Json, DoublesDumpShortestAndReparseAsDoubles) {
  EXPECT_EQ(Json(2.0).Dump(), "2.0");
  EXPECT_EQ(Json(-0.0).Dump(), "-0.0");
  EXPECT_EQ(Json(0.1).Dump(), "0.1");
  EXPECT_EQ(Json(1.5).Dump(), "1.5");
  EXPECT_EQ(Json(1e20).Dump(), "1e+20");
  EXPECT_EQ(Json(1e-7).Dump(), "1e-07");
  EXPECT_EQ(Json(123456.0).Dump(), "123456.0");
  EXPECT_EQ(Json(5e-324).Dump(), "5e-324");
  EXPECT_EQ(Json(std::numeric_limits<double>::max()).Dump(),
            "1.7976931348623157e+308");
  EXPECT_TRUE(MustParse(Json(2.0).Dump()).is_double());
  EXPECT_TRUE(MustParse(Json(1e20).Dump()).is_double());

  // NaN and infinities are not JSON.
  EXPECT_EQ(Json(std::numeric_limits<double>::quiet_NaN()).Dump(), "null");
  EXPECT_EQ(Json(std::numeric_limits<double>::infinity()).Dump(), "null");
  EXPECT_EQ(Json::Array({-std::numeric_limits<double>::infinity()}).Dump(),
            "[null]");

  // Random finite doubles round-trip bit for bit.
  std::mt19937_64 rng(42);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    if (!std::isfinite(d)) continue;
    const std::string text = Json(d).Dump();
    ASSERT_OK_AND_ASSIGN(Json back, ParseJson(text));
    ASSERT_TRUE(back.is_double()) << text;
    const double e = back.double_value();
    ASSERT_EQ(std::memcmp(&d, &e, sizeof(d)), 0) << text;
  }
}

TEST(Json, StringEscapes) {
  EXPECT_EQ(MustParse(R"("a\"b\\c\/d\be\ff\ng\rh\ti")"),
            Json("a\"b\\c/d\be\ff\ng\rh\ti"));
  EXPECT_EQ(MustParse(R"("\u0041\u00e9\u00E9\u20AC")"), Json("A\u00e9\u00e9\u20ac"));
  EXPECT_EQ(MustParse(R"("\u00e9")").string_value(), "\xC3\xA9");
  EXPECT_EQ(MustParse(R"("\u20ac")").string_value(), "\xE2\x82\xAC");
  // Surrogate pairs: U+1F600 and U+10FFFF.
  EXPECT_EQ(MustParse(R"("\ud83d\ude00")").string_value(), "\xF0\x9F\x98\x80");
  EXPECT_EQ(MustParse(R"("\uDBFF\uDFFF")").string_value(), "\xF4\x8F\xBF\xBF");
  EXPECT_EQ(MustParse(R"("\u0000")").string_value(), std::string(1, '\0'));
  // Raw UTF-8 passes through.
  EXPECT_EQ(MustParse("\"\xC3\xA9\xF0\x9F\x98\x80\"").string_value(),
            "\xC3\xA9\xF0\x9F\x98\x80");

  EXPECT_EQ(Json("q\"b\\s/\b\f\n\r\t\x01\x1f\x7f").Dump(),
            R"("q\"b\\s/\b\f\n\r\t\u0001\u001f)"
            "\x7f\"");
  EXPECT_EQ(Json(std::string(1, '\0')).Dump(), R"("\u0000")");
  // Invalid UTF-8 is written as U+FFFD.
  EXPECT_EQ(Json("a\xFF" "b\xC3").Dump(), "\"a\xEF\xBF\xBD" "b\xEF\xBF\xBD\"");

  // Every ASCII byte and some UTF-8 round-trips.
  std::string all;
  for (int c = 0; c < 128; ++c) all.push_back(static_cast<char>(c));
  all += "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
  ExpectRoundTrip(Json(all));
  ExpectRoundTrip(Json::Object().Set(all, all));
}

TEST(Json, ObjectsKeepOrderAndLastDuplicateWins) {
  const Json j = MustParse(R"({"z": 1, "a": 2, "m": 3, "a": 4})");
  EXPECT_EQ(j.Dump(), R"({"z":1,"a":4,"m":3})");
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.object()) keys.push_back(k);
  EXPECT_THAT(keys, ElementsAre("z", "a", "m"));

  // Large object with duplicates (hash path).
  std::string text = "{";
  for (int i = 0; i < 100; ++i) absl::StrAppend(&text, "\"k", i % 40, "\":", i, ",");
  text += "\"end\":true}";
  const Json big = MustParse(text);
  EXPECT_EQ(big.size(), 41u);
  EXPECT_THAT(big.GetInt("k0"), IsOkAndHolds(80));
  EXPECT_THAT(big.GetInt("k39"), IsOkAndHolds(79));
  EXPECT_EQ(big.object()[0].first, "k0");
  EXPECT_EQ(big.object()[40].first, "end");
}

TEST(Json, PrettyAndCompactDump) {
  const Json j = MustParse(
      R"({"a": [1, 2.5, {"b": null}], "e": [], "o": {}, "s": "x"})");
  EXPECT_EQ(j.Dump(), R"({"a":[1,2.5,{"b":null}],"e":[],"o":{},"s":"x"})");
  EXPECT_EQ(j.Dump(2), R"({
  "a": [
    1,
    2.5,
    {
      "b": null
    }
  ],
  "e": [],
  "o": {},
  "s": "x"
})");
  EXPECT_EQ(Json::Array({1, 2}).Dump(0), "[\n1,\n2\n]");
  EXPECT_EQ(Json(3).Dump(4), "3");
  std::ostringstream os;
  os << j;
  EXPECT_EQ(os.str(), j.Dump());
}

TEST(Json, RoundTrips) {
  const char* docs[] = {
      "null", "true", "[]", "{}", "[[[]]]", R"({"":""})",
      R"({"model": {"layers": [{"type": "dense", "units": 128, "bias": true},
                              {"type": "relu"}],
                   "lr": 1e-3, "decay": 0.999, "name": "m\u00e9\n"},
          "steps": -5, "tags": [null, false, 0, -0.5, "\ud83d\ude00"]})",
  };
  for (const char* text : docs) {
    SCOPED_TRACE(text);
    ExpectRoundTrip(MustParse(text));
  }
  Json built = Json::Object()
                   .Set("ints", Json::Array({0, -1, 1 << 30}))
                   .Set("doubles", Json::Array({0.1, 1e300, -2.0, 3e-310}))
                   .Set("nested", Json::Object().Set("x", Json::Array()));
  ExpectRoundTrip(built);
}

// Errors: "json: line L, column C: " (C counts bytes from 1 and is the byte
// where the parser stopped, or the end of input), then nlohmann-json's words.
TEST(Json, ErrorsGiveLineColumnAndWhatWasExpected) {
  EXPECT_EQ(ParseError(""),
            "json: line 1, column 1: syntax error while parsing value - unexpected end of input; "
            "expected '[', '{', or a literal");
  EXPECT_EQ(ParseError("   \n  "),
            "json: line 2, column 3: syntax error while parsing value - unexpected end of input; "
            "expected '[', '{', or a literal");
  EXPECT_EQ(ParseError("{\n  \"a\": 1,\n  \"b\": 2  \"c\": 3\n}"),
            "json: line 3, column 13: syntax error while parsing object - unexpected string "
            "literal; expected '}'");
  EXPECT_EQ(ParseError("[1 2]"),
            "json: line 1, column 4: syntax error while parsing array - unexpected number "
            "literal; expected ']'");
  EXPECT_EQ(ParseError("[1"),
            "json: line 1, column 3: syntax error while parsing array - unexpected end of input; "
            "expected ']'");
  EXPECT_EQ(ParseError("{\"a\" 1}"),
            "json: line 1, column 6: syntax error while parsing object separator - unexpected "
            "number literal; expected ':'");
  EXPECT_EQ(ParseError("{1:2}"),
            "json: line 1, column 2: syntax error while parsing object key - unexpected number "
            "literal; expected string literal");
  EXPECT_EQ(ParseError("{'a':2}"),
            "json: line 1, column 2: syntax error while parsing object key - invalid literal; "
            "last read: '{''; expected string literal");
  EXPECT_EQ(ParseError("{\"a\":1,,}"),
            "json: line 1, column 8: syntax error while parsing object key - unexpected ','; "
            "expected string literal");
  EXPECT_EQ(ParseError("{\"a\":}"),
            "json: line 1, column 6: syntax error while parsing value - unexpected '}'; expected "
            "'[', '{', or a literal");
  EXPECT_EQ(ParseError("[,1]"),
            "json: line 1, column 2: syntax error while parsing value - unexpected ','; expected "
            "'[', '{', or a literal");
  EXPECT_EQ(ParseError("{"),
            "json: line 1, column 2: syntax error while parsing object key - unexpected end of "
            "input; expected string literal");
  EXPECT_EQ(ParseError("@"),
            "json: line 1, column 1: syntax error while parsing value - invalid literal; last "
            "read: '@'");
  EXPECT_EQ(ParseError("\x01"),
            "json: line 1, column 1: syntax error while parsing value - invalid literal; last "
            "read: '<U+0001>'");
  EXPECT_EQ(ParseError("+1"),
            "json: line 1, column 1: syntax error while parsing value - invalid literal; last "
            "read: '+'");
  EXPECT_EQ(ParseError(".5"),
            "json: line 1, column 1: syntax error while parsing value - invalid literal; last "
            "read: '.'");
  EXPECT_EQ(ParseError("NaN"),
            "json: line 1, column 1: syntax error while parsing value - invalid literal; last "
            "read: 'N'");
  EXPECT_EQ(ParseError("[Infinity]"),
            "json: line 1, column 2: syntax error while parsing value - invalid literal; last "
            "read: '[I'");
  // The text nlohmann quotes is cut to its last 32 bytes.
  EXPECT_EQ(ParseError(absl::StrCat("[", std::string(40, ' '), "x]")),
            absl::StrCat("json: line 1, column 42: syntax error while parsing value - invalid "
                         "literal; last read: '...",
                         std::string(31, ' '), "x'"));
}

TEST(Json, RejectsTrailingGarbage) {
  EXPECT_EQ(ParseError("{} x"),
            "json: line 1, column 4: syntax error while parsing value - invalid literal; last "
            "read: '{} x'; expected end of input");
  EXPECT_EQ(ParseError("1 2"),
            "json: line 1, column 3: syntax error while parsing value - unexpected number "
            "literal; expected end of input");
  EXPECT_EQ(ParseError("[1]]"),
            "json: line 1, column 4: syntax error while parsing value - unexpected ']'; expected "
            "end of input");
  EXPECT_EQ(ParseError("nullx"),
            "json: line 1, column 5: syntax error while parsing value - invalid literal; last "
            "read: 'nullx'; expected end of input");
  // nlohmann would stop at a NUL byte as at the end of input.
  EXPECT_EQ(ParseError(absl::string_view("1\0", 2)),
            "json: line 1, column 2: syntax error while parsing value - unexpected NUL byte");
  EXPECT_EQ(ParseError(absl::string_view("[1,\n 2\0]", 8)),
            "json: line 2, column 3: syntax error while parsing value - unexpected NUL byte");
  EXPECT_EQ(ParseError(absl::string_view("[1\0]", 4)),
            "json: line 1, column 3: syntax error while parsing value - unexpected NUL byte");
  EXPECT_EQ(ParseError(absl::string_view("[tr\0]", 5)),
            "json: line 1, column 4: syntax error while parsing value - invalid literal; last "
            "read: '[tr<U+0000>'");
  EXPECT_EQ(ParseError(absl::string_view("[1 2\0]", 6)),
            "json: line 1, column 4: syntax error while parsing array - unexpected number "
            "literal; expected ']'");
}

TEST(Json, RejectsTrailingCommas) {
  EXPECT_EQ(ParseError("[1,]"),
            "json: line 1, column 4: syntax error while parsing value - unexpected ']'; expected "
            "'[', '{', or a literal");
  EXPECT_EQ(ParseError("[1, \n ]"),
            "json: line 2, column 2: syntax error while parsing value - unexpected ']'; expected "
            "'[', '{', or a literal");
  EXPECT_EQ(ParseError("{\"a\":1,}"),
            "json: line 1, column 8: syntax error while parsing object key - unexpected '}'; "
            "expected string literal");
}

TEST(Json, RejectsBadNumbers) {
  // A leading zero ends the number: the next digit is an unexpected token.
  EXPECT_EQ(ParseError("01"),
            "json: line 1, column 2: syntax error while parsing value - unexpected number "
            "literal; expected end of input");
  EXPECT_EQ(ParseError("[-007]"),
            "json: line 1, column 4: syntax error while parsing array - unexpected number "
            "literal; expected ']'");
  EXPECT_EQ(ParseError("-"),
            "json: line 1, column 2: syntax error while parsing value - invalid number; expected "
            "digit after '-'; last read: '-'");
  EXPECT_EQ(ParseError("-a"),
            "json: line 1, column 2: syntax error while parsing value - invalid number; expected "
            "digit after '-'; last read: '-a'");
  EXPECT_EQ(ParseError("1."),
            "json: line 1, column 3: syntax error while parsing value - invalid number; expected "
            "digit after '.'; last read: '1.'");
  EXPECT_EQ(ParseError("1.e5"),
            "json: line 1, column 3: syntax error while parsing value - invalid number; expected "
            "digit after '.'; last read: '1.e'");
  EXPECT_EQ(ParseError("1e"),
            "json: line 1, column 3: syntax error while parsing value - invalid number; expected "
            "'+', '-', or digit after exponent; last read: '1e'");
  EXPECT_EQ(ParseError("1e+"),
            "json: line 1, column 4: syntax error while parsing value - invalid number; expected "
            "digit after exponent sign; last read: '1e+'");
  EXPECT_EQ(ParseError("0x10"),
            "json: line 1, column 2: syntax error while parsing value - invalid literal; last "
            "read: '0x'; expected end of input");
  EXPECT_EQ(ParseError("1.5.2"),
            "json: line 1, column 4: syntax error while parsing value - invalid literal; last "
            "read: '1.5.'; expected end of input");
}

TEST(Json, RejectsBadLiterals) {
  EXPECT_EQ(ParseError("tru"),
            "json: line 1, column 4: syntax error while parsing value - invalid literal; last "
            "read: 'tru'");
  EXPECT_EQ(ParseError("[True]"),
            "json: line 1, column 2: syntax error while parsing value - invalid literal; last "
            "read: '[T'");
  EXPECT_EQ(ParseError("fals"),
            "json: line 1, column 5: syntax error while parsing value - invalid literal; last "
            "read: 'fals'");
  EXPECT_EQ(ParseError("[nul]"),
            "json: line 1, column 5: syntax error while parsing value - invalid literal; last "
            "read: '[nul]'");
}

TEST(Json, RejectsBadStrings) {
  constexpr char kAt[] = "syntax error while parsing value - invalid string: ";
  const auto error = [&](int column, absl::string_view what) {
    return absl::StrCat("json: line 1, column ", column, ": ", kAt, what);
  };
  EXPECT_EQ(ParseError("\"abc"), error(5, "missing closing quote; last read: '\"abc'"));
  EXPECT_EQ(ParseError("[1, \"abc\\\"]"),
            error(12, "missing closing quote; last read: '\"abc\\\"]'"));
  EXPECT_EQ(ParseError("\"abc\\"),
            error(6, "forbidden character after backslash; last read: '\"abc\\'"));
  EXPECT_EQ(ParseError("\"a\nb\""),
            error(3,
                  "control character U+000A (LF) must be escaped to \\u000A or \\n; last read: "
                  "'\"a<U+000A>'"));
  EXPECT_EQ(ParseError("\"a\tb\""),
            error(3,
                  "control character U+0009 (HT) must be escaped to \\u0009 or \\t; last read: "
                  "'\"a<U+0009>'"));
  EXPECT_EQ(ParseError(absl::string_view("\"a\0\"", 4)),
            error(3,
                  "control character U+0000 (NUL) must be escaped to \\u0000; last read: "
                  "'\"a<U+0000>'"));
  EXPECT_EQ(ParseError(R"("a\qb")"),
            error(4, "forbidden character after backslash; last read: '\"a\\q'"));
  EXPECT_EQ(ParseError(R"("\x41")"),
            error(3, "forbidden character after backslash; last read: '\"\\x'"));
  EXPECT_EQ(ParseError(R"("\')"),
            error(3, "forbidden character after backslash; last read: '\"\\''"));
  EXPECT_EQ(ParseError("\"\\\x01\""),
            error(3, "forbidden character after backslash; last read: '\"\\<U+0001>'"));
  EXPECT_EQ(ParseError(R"("\u12")"),
            error(6, "'\\u' must be followed by 4 hex digits; last read: '\"\\u12\"'"));
  EXPECT_EQ(ParseError(R"("\u12G4")"),
            error(6, "'\\u' must be followed by 4 hex digits; last read: '\"\\u12G'"));
  EXPECT_EQ(ParseError(R"("\u)"),
            error(4, "'\\u' must be followed by 4 hex digits; last read: '\"\\u'"));
  constexpr char kHigh[] = "surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF";
  EXPECT_EQ(ParseError(R"("x\ud83d")"),
            error(9, absl::StrCat(kHigh, "; last read: '\"x\\ud83d\"'")));
  EXPECT_EQ(ParseError(R"("\ud83dx")"), error(8, absl::StrCat(kHigh, "; last read: '\"\\ud83dx'")));
  EXPECT_EQ(ParseError(R"("\ud83d\u0041")"),
            error(13, absl::StrCat(kHigh, "; last read: '\"\\ud83d\\u0041'")));
  EXPECT_EQ(ParseError(R"("\ud83d\ud83d")"),
            error(13, absl::StrCat(kHigh, "; last read: '\"\\ud83d\\ud83d'")));
  EXPECT_EQ(ParseError(R"("\ude00")"),
            error(7,
                  "surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF; last read: "
                  "'\"\\ude00'"));
  // Invalid UTF-8: stray continuation, overlong, encoded surrogate, above
  // U+10FFFF, truncated sequence. The column is the byte that cannot follow.
  const struct {
    const char* text;
    int column;
    const char* read;
  } kBadUtf8[] = {
      {"\"\x80\"", 2, "\"\x80"},
      {"\"\xC0\xAF\"", 2, "\"\xC0"},
      {"\"\xE0\x80\xAF\"", 3, "\"\xE0\x80"},
      {"\"\xED\xA0\x80\"", 3, "\"\xED\xA0"},
      {"\"\xF4\x90\x80\x80\"", 3, "\"\xF4\x90"},
      {"\"\xF5\x80\x80\x80\"", 2, "\"\xF5"},
      {"\"\xE2\x82\"", 4, "\"\xE2\x82\""},
      {"\"\xC3", 3, "\"\xC3"},
  };
  for (const auto& bad : kBadUtf8) {
    EXPECT_EQ(ParseError(bad.text),
              error(bad.column, absl::StrCat("ill-formed UTF-8 byte; last read: '", bad.read, "'")))
        << bad.text;
  }
  EXPECT_EQ(ParseError("\xC3\xA9"),
            "json: line 1, column 1: syntax error while parsing value - invalid literal; last "
            "read: '\xC3'");
}

TEST(Json, NestingDepthLimit) {
  const auto nested = [](int depth, const char* open, const char* close) {
    std::string s;
    for (int i = 0; i < depth; ++i) s += open;
    for (int i = 0; i < depth; ++i) s += close;
    return s;
  };
  ASSERT_OK_AND_ASSIGN(Json ok, ParseJson(nested(Json::kMaxDepth, "[", "]")));
  ExpectRoundTrip(ok);
  EXPECT_OK(ParseJson(nested(Json::kMaxDepth, "{\"k\":", "}").replace(
      Json::kMaxDepth * 5, 0, "1")));
  EXPECT_EQ(ParseError(nested(Json::kMaxDepth + 1, "[", "]")),
            "json: line 1, column 513: nesting depth exceeds 512");
  EXPECT_EQ(ParseError(nested(Json::kMaxDepth + 1, "{\"k\":", "}")),
            "json: line 1, column 2561: nesting depth exceeds 512");
  // Hostile input: far deeper than any stack would take.
  EXPECT_THAT(ParseJson(std::string(1000000, '[')),
              StatusIs(kInvalid, HasSubstr("nesting depth exceeds 512")));
  EXPECT_THAT(ParseJson(nested(100000, "[{\"a\":", "}]")),
              StatusIs(kInvalid, HasSubstr("nesting depth exceeds 512")));
}

TEST(Json, BigDocumentsParseFast) {
  std::string text = "[";
  for (int i = 0; i < 10000; ++i) {
    if (i > 0) text += ",";
    absl::StrAppend(&text, R"({"id":)", i, R"(,"w":)", i * 0.5,
                    R"(,"name":"item \u00e9 )", i, R"(","tags":[true,null]})");
  }
  text += "]";
  std::string object_text = "{";
  for (int i = 0; i < 10000; ++i) {
    if (i > 0) object_text += ",";
    absl::StrAppend(&object_text, "\"key", i, "\":", i);
  }
  object_text += "}";

  const auto start = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(Json doc, ParseJson(text));
  ASSERT_OK_AND_ASSIGN(Json object, ParseJson(object_text));
  const std::string dumped = doc.Dump();
  ASSERT_OK_AND_ASSIGN(Json again, ParseJson(dumped));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(seconds, 2.0);  // typically a few milliseconds

  ASSERT_EQ(doc.size(), 10000u);
  EXPECT_THAT(doc.array()[9999].GetInt("id"), IsOkAndHolds(9999));
  EXPECT_THAT(doc.array()[3].GetDouble("w"), IsOkAndHolds(1.5));
  EXPECT_THAT(doc.array()[3].GetString("name"), IsOkAndHolds("item \u00e9 3"));
  EXPECT_EQ(object.size(), 10000u);
  EXPECT_THAT(object.GetInt("key9999"), IsOkAndHolds(9999));
  EXPECT_EQ(again, doc);
  EXPECT_EQ(MustParse(object.Dump()), object);
}

// Random and mutated inputs never crash; whatever parses round-trips.
TEST(Json, FuzzedInputsNeverCrash) {
  const std::string seed =
      R"({"a": [1, -2.5e3, true, false, null, "x\u00e9\n\ud83d\ude00"],
          "b": {"c": {}, "d": []}, "e": "\u0000"})";
  const char alphabet[] = "{}[]\":,.-+eE0123456789tfnrulas\\u \n\x80\xC3\xA9\xFF";
  std::mt19937 rng(7);
  int parsed = 0;
  for (int iter = 0; iter < 30000; ++iter) {
    std::string text;
    if (iter % 2 == 0) {
      text = seed;
      const int edits = 1 + rng() % 4;
      for (int k = 0; k < edits; ++k) {
        const size_t pos = rng() % (text.size() + 1);
        switch (rng() % 3) {
          case 0: text.insert(pos, 1, alphabet[rng() % (sizeof(alphabet) - 1)]); break;
          case 1: if (pos < text.size()) text.erase(pos, 1); break;
          default:
            if (pos < text.size()) text[pos] = alphabet[rng() % (sizeof(alphabet) - 1)];
        }
      }
    } else {
      const int len = rng() % 24;
      for (int k = 0; k < len; ++k) text.push_back(alphabet[rng() % (sizeof(alphabet) - 1)]);
    }
    absl::StatusOr<Json> j = ParseJson(text);
    if (!j.ok()) {
      ASSERT_EQ(j.status().code(), kInvalid);
      ASSERT_TRUE(absl::StartsWith(j.status().message(), "json: line "))
          << j.status();
      continue;
    }
    ++parsed;
    ASSERT_OK_AND_ASSIGN(Json back, ParseJson(j->Dump()));
    ASSERT_EQ(back, *j) << text;
  }
  EXPECT_GT(parsed, 100);
}

}  // namespace
}  // namespace tandem
