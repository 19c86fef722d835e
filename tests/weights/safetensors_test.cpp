// The safetensors reader: round trips small files, and refuses every malformed one with a single
// paceline::Error that names the file and, where there is one, the tensor.
#include "model/safetensors.h"

#include <gtest/gtest.h>

#include <limits>

#include "base/error.h"
#include "safetensors_writer.h"

namespace paceline {
namespace {

using testing::TempDir;
using testing::TestTensor;

// Loads bytes written to a file named `file_name` and returns the error, or "" when it loads.
std::string open_error(const std::string& bytes, const std::string& file_name = "bad.safetensors") {
  TempDir dir;
  testing::write_file(dir / file_name, bytes);
  try {
    SafetensorsFile file((dir / file_name).string());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, RoundTripsEachDtypeBitForBit) {
  TempDir dir;
  // bf16: 1, -2, smallest subnormal, inf, NaN. f16: 1, -2, smallest subnormal, largest, -inf.
  const std::vector<uint16_t> bf16 = {0x3f80, 0xc000, 0x0001, 0x7f80, 0x7fc0, 0x4049};
  const std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x0001, 0x7bff, 0xfc00, 0x3555};
  const std::vector<float> f32 = {0.5f, -1.25f, 3e-40f};
  testing::write_file(
      dir / "model.safetensors",
      testing::safetensors_image({{"a.bf16", "BF16", {2, 3}, testing::u16_bytes(bf16)},
                                  {"b.f16", "F16", {6}, testing::u16_bytes(f16)},
                                  {"c.f32", "F32", {3, 1}, testing::f32_bytes(f32)},
                                  {"d.empty", "F32", {0, 4}, ""}}));
  SafetensorsFile file((dir / "model.safetensors").string());
  ASSERT_EQ(file.tensors().size(), 4u);  // __metadata__ is not a tensor

  const TensorView* a = file.find("a.bf16");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::kBF16);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->at(0), 1.0f);
  EXPECT_EQ(a->at(1), -2.0f);
  EXPECT_EQ(a->at(2), std::ldexp(1.0f, -133));
  EXPECT_EQ(a->at(3), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(a->at(4)));
  EXPECT_EQ(a->at(5), 3.140625f);

  const TensorView* b = file.find("b.f16");
  ASSERT_NE(b, nullptr);
  std::vector<float> out(6);
  b->to_f32(out.data());
  EXPECT_EQ(out, (std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -24), 65504.0f,
                                     -std::numeric_limits<float>::infinity(), 0.333251953125f}));

  const TensorView* c = file.find("c.f32");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->at(1), -1.25f);
  EXPECT_EQ(c->at(2), 3e-40f);

  EXPECT_EQ(file.find("d.empty")->numel(), 0);
  EXPECT_EQ(file.find("missing"), nullptr);
}

TEST(Safetensors, ReadsTensorsAtUnalignedOffsets) {
  // A 1-element bf16 first puts the f32 at an odd 2-byte offset.
  std::string bytes =
      testing::safetensors_from_header(R"({"x":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]},)"
                                       R"("y":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
                                       testing::u16_bytes({0x3f80}) + testing::f32_bytes({2.5f}));
  TempDir dir;
  testing::write_file(dir / "odd.safetensors", bytes);
  SafetensorsFile file((dir / "odd.safetensors").string());
  EXPECT_EQ(file.find("y")->at(0), 2.5f);
}

std::string tensor_header(const std::string& dtype, const std::string& shape,
                          const std::string& offsets) {
  return R"({"w":{"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":)" + offsets +
         "}}";
}

struct Malformed {
  const char* what;
  std::string bytes;
  const char* tensor;  // the tensor the message must name; nullptr when the file is bad as a whole
  const char* expected;  // a further piece of the message
};

std::vector<Malformed> malformed_files() {
  const std::string data16 = std::string(16, '\0');
  auto with_header = [&](const std::string& header) {
    return testing::safetensors_from_header(header, data16);
  };
  std::string length_past_end = testing::safetensors_from_header("{}", "");
  length_past_end[0] = 100;
  std::string huge_length(16, '\xff');
  std::string valid =
      testing::safetensors_image({{"w", "F32", {4}, testing::f32_bytes({1, 2, 3, 4})}});
  return {
      {"empty file", "", nullptr, "truncated"},
      {"short header length", std::string("\x08\x00\x00", 3), nullptr, "truncated"},
      {"length beyond the file", length_past_end, nullptr, "runs past the end"},
      {"length near 2^64", huge_length, nullptr, "runs past the end"},
      {"truncated data", valid.substr(0, valid.size() - 1), "w", "outside the data section"},
      {"garbage header", with_header("not json at all"), nullptr, "not valid JSON"},
      {"header cut mid-JSON", with_header(R"({"w":{"dtype":"F32")"), nullptr, "not valid JSON"},
      {"header not an object", with_header("[1,2,3]"), nullptr, "must be a JSON object"},
      {"deep nesting", with_header(std::string(100000, '[') + std::string(100000, ']')), nullptr,
       "nests deeper"},
      {"entry not an object", with_header(R"({"w":7})"), "w", "must be an object"},
      {"unsupported dtype I8", with_header(tensor_header("I8", "[4]", "[0,4]")), "w", "dtype I8"},
      {"F64", with_header(tensor_header("F64", "[2]", "[0,16]")), "w", "dtype F64"},
      {"missing dtype", with_header(R"({"w":{"shape":[1],"data_offsets":[0,4]}})"), "w", "dtype"},
      {"negative dimension", with_header(tensor_header("F32", "[-1]", "[0,4]")), "w", "shape"},
      {"fractional dimension", with_header(tensor_header("F32", "[1.5]", "[0,4]")), "w", "shape"},
      {"shape overflowing 64 bits",
       with_header(tensor_header("F32", "[4294967296,4294967296]", "[0,16]")), "w", "too large"},
      {"dimension beyond int64",
       with_header(tensor_header("F32", "[18446744073709551615]", "[0,16]")), "w", "shape"},
      {"offsets past the data", with_header(tensor_header("F32", "[8]", "[0,32]")), "w",
       "outside the data section"},
      {"offsets reversed", with_header(tensor_header("F32", "[0]", "[8,4]")), "w",
       "outside the data section"},
      {"offsets near 2^64",
       with_header(tensor_header("F32", "[1]", "[18446744073709551612,18446744073709551616]")), "w",
       "data_offsets"},
      {"one offset", with_header(tensor_header("F32", "[1]", "[0]")), "w", "data_offsets"},
      {"shape/offset mismatch", with_header(tensor_header("F32", "[3]", "[0,16]")), "w",
       "needs 12 bytes"},
      {"overlapping tensors",
       with_header(R"({"v":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                   R"("w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})"),
       "w", "overlap tensor 'v'"},
  };
}

TEST(Safetensors, EveryMalformedFileIsOneErrorNamingFileAndTensor) {
  for (const Malformed& m : malformed_files()) {
    SCOPED_TRACE(m.what);
    std::string message = open_error(m.bytes, "shard-7.safetensors");
    ASSERT_FALSE(message.empty()) << "loaded";
    EXPECT_NE(message.find("shard-7.safetensors"), std::string::npos) << message;
    if (m.tensor) {
      EXPECT_NE(message.find("tensor '" + std::string(m.tensor) + "'"), std::string::npos)
          << message;
    }
    EXPECT_NE(message.find(m.expected), std::string::npos) << message;
  }
}

TEST(Safetensors, EveryTruncationOfAValidFileIsAnError) {
  std::string valid = testing::safetensors_image({{"a", "BF16", {3}, testing::u16_bytes({1, 2, 3})},
                                                  {"b", "F32", {2}, testing::f32_bytes({1, 2})}});
  for (size_t n = 0; n < valid.size(); ++n) {
    std::string message;
    try {
      safetensors_parse(reinterpret_cast<const unsigned char*>(valid.data()), n, "cut.safetensors");
    } catch (const Error& e) {
      message = e.what();
    }
    EXPECT_NE(message.find("cut.safetensors"), std::string::npos) << n << ": " << message;
  }
}

TEST(Safetensors, RandomCorruptionNeverCrashes) {
  const std::string valid =
      testing::safetensors_image({{"a", "BF16", {2, 3}, testing::u16_bytes({1, 2, 3, 4, 5, 6})},
                                  {"b", "F16", {4}, testing::u16_bytes({7, 8, 9, 10})},
                                  {"c", "F32", {1}, testing::f32_bytes({1})}});
  uint64_t state = 1;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<size_t>(state >> 33);
  };
  const char replacements[] = "0123456789-[]{}\",.:e\x00\xff";
  for (int round = 0; round < 20000; ++round) {
    std::string bytes = valid;
    for (int flips = 1 + static_cast<int>(next() % 3); flips > 0; --flips) {
      bytes[next() % bytes.size()] = replacements[next() % (sizeof replacements - 1)];
    }
    try {
      safetensors_parse(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                        "fuzz.safetensors");
    } catch (const Error& e) {
      ASSERT_NE(std::string(e.what()).find("fuzz.safetensors"), std::string::npos) << e.what();
    }
  }
}

TEST(Safetensors, MissingFileIsAnError) {
  EXPECT_NE(open_error("", "x").find("truncated"), std::string::npos);
  try {
    SafetensorsFile file("no-such-dir/model.safetensors");
    FAIL() << "opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-dir/model.safetensors: cannot open"),
              std::string::npos);
  }
}

TEST(Safetensors, DtypeNames) {
  EXPECT_EQ(dtype_from_safetensors_name("BF16"), DType::kBF16);
  EXPECT_EQ(dtype_from_safetensors_name("F16"), DType::kF16);
  EXPECT_EQ(dtype_from_safetensors_name("F32"), DType::kF32);
  EXPECT_FALSE(dtype_from_safetensors_name("I8").has_value());
  EXPECT_FALSE(dtype_from_safetensors_name("bf16").has_value());
}

}  // namespace
}  // namespace paceline
