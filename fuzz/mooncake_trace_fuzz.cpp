// libFuzzer target over the Mooncake JSONL reader (the whole file, through a temporary file, so
// that blank lines, line numbers and session continuation are covered) and the --isl-scale /
// --max-isl transform of its records. Properties: a file either loads or throws paceline::Error;
// records keep the order and line numbers of the file; a record without a timestamp continues a
// session with a delay; the transform keeps no record over --max-isl.
// Built and run by scripts/fuzz.
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "base/error.h"
#include "bench/mooncake_trace.h"
#include "bench/trace_transform.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace paceline;
using namespace paceline::bench;
using paceline::fuzz::require;

std::string g_path;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_path = (std::filesystem::temp_directory_path() /
            ("paceline-mooncake-fuzz-" + std::to_string(getpid()) + ".jsonl"))
               .string();
  // The temporary file goes when the run ends (libFuzzer ends a timed run by exit()).
  std::atexit([] {
    std::error_code ignored;
    std::filesystem::remove(g_path, ignored);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(g_path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  std::vector<MooncakeRecord> records;
  try {
    records = load_mooncake(g_path);
  } catch (const Error&) {
    return 0;
  }
  int64_t last_line = 0;
  for (const MooncakeRecord& r : records) {
    require(r.line > last_line, "records out of file order");
    last_line = r.line;
    require(r.timestamp_ms || (r.session_id && r.delay_ms), "a record with no time");
    require(r.input_length >= 0 && r.output_length >= 0, "a negative length");
  }
  TraceTransform transform{0.25, 0.5, 4096};
  std::vector<MooncakeRecord> kept;
  try {
    kept = transform_records(records, transform, kMooncakeBlockSize);
  } catch (const Error&) {
    return 0;  // every record over --max-isl: the user's error, named, not a crash
  }
  for (const MooncakeRecord& r : kept) {
    require(r.input_length <= 4096, "kept a record over max-isl");
  }
  return 0;
}
