// The trace readers against the real traces in ../shared/traces (read in place), and their
// errors on bad input.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "base/error.h"
#include "bench/agentx_trace.h"
#include "bench/mooncake_trace.h"
#include "bundled_traces.h"

namespace paceline::bench {
namespace {

const std::string& kTraces = test_util::kTracesDir;

// Every request of a session, parent and subagents alike.
void collect(const std::vector<AgentxRequest>& requests,
             const std::vector<AgentxSubagent>& subagents, std::vector<const AgentxRequest*>& out) {
  for (const auto& r : requests) out.push_back(&r);
  for (const auto& s : subagents) collect(s.requests, s.subagents, out);
}

class AgentxTraces : public ::testing::Test {
 protected:
  const std::vector<AgentxSession>* sessions_ = &test_util::bundled_agentx_sessions();
};

TEST_F(AgentxTraces, EveryFileParses) {
  // load_agentx read the whole directory (it fails on the first bad file, naming it); every
  // .json file there is one session.
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(kTraces + "/agentx")) {
    if (e.path().extension() == ".json") files.insert(e.path().filename().string());
  }
  std::set<std::string> parsed;
  for (const auto& s : *sessions_) parsed.insert(s.file);
  EXPECT_EQ(files.size(), 150u);
  EXPECT_EQ(parsed, files);
}

TEST_F(AgentxTraces, CountsMatchTheReadme) {
  size_t requests = 0, with_subagents = 0, subagents = 0;
  for (const auto& s : *sessions_) {
    std::vector<const AgentxRequest*> all;
    collect(s.requests, s.subagents, all);
    requests += all.size();
    subagents += s.subagents.size();
    if (!s.subagents.empty()) ++with_subagents;
    EXPECT_EQ(s.block_size, 64) << s.file;
    EXPECT_EQ(s.hash_id_scope, "local") << s.file;
    EXPECT_EQ(s.id + ".json", s.file);
  }
  EXPECT_EQ(requests, 9337u);
  EXPECT_EQ(with_subagents, 10u);
  EXPECT_EQ(subagents, 33u);
}

TEST_F(AgentxTraces, TotalsAgreeWithTheRequests) {
  for (const auto& s : *sessions_) {
    ASSERT_TRUE(s.totals) << s.file;
    int64_t pin = 0, pout = 0, sin = 0, sout = 0;
    for (const auto& r : s.requests) pin += r.in, pout += r.out;
    for (const auto& sub : s.subagents) {
      for (const auto& r : sub.requests) sin += r.in, sout += r.out;
    }
    EXPECT_EQ(s.totals->parent_tokens.input, pin) << s.file;
    EXPECT_EQ(s.totals->parent_tokens.output, pout) << s.file;
    EXPECT_EQ(s.totals->subagent_tokens.input, sin) << s.file;
    EXPECT_EQ(s.totals->subagent_tokens.output, sout) << s.file;
    EXPECT_EQ(s.totals->combined_tokens.input, pin + sin) << s.file;
    EXPECT_EQ(s.totals->subagent_count, static_cast<int64_t>(s.subagents.size())) << s.file;
  }
}

TEST_F(AgentxTraces, HashIdsCoverFullBlocksAndChain) {
  for (const auto& s : *sessions_) {
    std::vector<const AgentxRequest*> all;
    collect(s.requests, s.subagents, all);
    std::unordered_map<int64_t, int64_t> predecessor;  // id -> the id before it (-1: first)
    std::unordered_map<int64_t, size_t> position;
    for (const AgentxRequest* r : all) {
      // The recorder hashes full blocks only: floor(in / 64) ids.
      EXPECT_EQ(static_cast<int64_t>(r->hash_ids.size()), r->in / s.block_size) << s.file;
      for (size_t i = 0; i < r->hash_ids.size(); ++i) {
        int64_t prev = i == 0 ? -1 : r->hash_ids[i - 1];
        auto [it, fresh] = predecessor.try_emplace(r->hash_ids[i], prev);
        EXPECT_EQ(it->second, prev) << s.file << ": id " << r->hash_ids[i];
        auto [pit, pfresh] = position.try_emplace(r->hash_ids[i], i);
        EXPECT_EQ(pit->second, i) << s.file;
      }
      EXPECT_GE(r->out, 0);
      if (r->api_time) {
        EXPECT_GE(*r->api_time, 0.0);
      }
    }
  }
}

TEST_F(AgentxTraces, TimesAreOrderedAndSubagentsStartAfterTheirSpawningTurn) {
  int checked = 0;
  for (const auto& s : *sessions_) {
    EXPECT_EQ(s.requests.front().t, 0.0) << s.file;
    for (size_t i = 1; i < s.requests.size(); ++i) EXPECT_LE(s.requests[i - 1].t, s.requests[i].t);
    for (const auto& sub : s.subagents) {
      ASSERT_FALSE(sub.requests.empty());
      EXPECT_EQ(sub.requests.front().t, 0.0) << s.file << " " << sub.agent_id;
      EXPECT_EQ(sub.status, "completed");
      // `t` is the end: start = t - duration falls within a second after the spawning turn ended,
      // and no parent turn begins while the subagent runs.
      const AgentxRequest* spawn = nullptr;
      for (const auto& r : s.requests) {
        if (r.t <= sub.start_s()) spawn = &r;
        if (r.t > sub.start_s()) {
          EXPECT_GE(r.t, sub.end_s()) << s.file;
        }
      }
      ASSERT_NE(spawn, nullptr);
      double gap = sub.start_s() - spawn->end_s();
      EXPECT_GE(gap, 0.0) << s.file << " " << sub.agent_id;
      EXPECT_LE(gap, 1.0) << s.file << " " << sub.agent_id;
      // The last child call ends inside the subagent's recorded span.
      EXPECT_LE(sub.start_s() + sub.requests.back().end_s(), sub.end_s() + 1e-9);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 33);
}

TEST(AgentxReader, ErrorsNameFileAndField) {
  auto doc = nlohmann::json::parse(R"({
    "id": "x", "models": ["m"], "block_size": 64, "hash_id_scope": "local",
    "tool_tokens": 0, "system_tokens": 0,
    "requests": [
      {"t": 0.0, "type": "n", "model": "m", "in": 130, "out": 5, "hash_ids": [1, 2],
       "input_types": ["text"], "output_types": ["text"], "stop": "end_turn", "api_time": 1.0},
      {"t": 2.0, "type": "subagent", "agent_id": "a", "subagent_type": "Explore",
       "status": "completed", "duration_ms": 500, "total_tokens": 1, "tool_use_count": 0,
       "models": ["m"], "requests": [
         {"t": 0.0, "type": "n", "model": "m", "in": 64, "out": "7", "hash_ids": [1],
          "input_types": [], "output_types": [], "stop": ""}]}
    ]})");
  try {
    parse_agentx_session(doc, "bad.json");
    FAIL() << "accepted a string for out";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "bad.json: requests[1].requests[0].out: expected an integer, found string");
  }

  doc["requests"][1]["requests"][0]["out"] = 7;
  EXPECT_NO_THROW(parse_agentx_session(doc, "bad.json"));

  auto missing = doc;
  missing["requests"][0].erase("stop");
  EXPECT_THROW(
      {
        try {
          parse_agentx_session(missing, "bad.json");
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(), "bad.json: requests[0].stop: missing required field");
          throw;
        }
      },
      Error);

  auto ids = doc;
  ids["requests"][0]["hash_ids"] = {1, 2, 3, 4};
  try {
    parse_agentx_session(ids, "bad.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "bad.json: requests[0].hash_ids: 4 ids for in=130 with block_size 64: expected 2 or 3");
  }

  auto order = doc;
  order["requests"][1]["t"] = -0.5;
  try {
    parse_agentx_session(order, "bad.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "bad.json: requests[1].t: -0.5 is earlier than the previous entry's 0");
  }

  auto top = doc;
  top["block_size"] = 0;
  EXPECT_THROW(parse_agentx_session(top, "bad.json"), Error);
}

// Found by fuzz/agentx_trace_fuzz.cpp: the ceil of in / block_size was in + block_size - 1,
// which overflows (UBSan aborts; elsewhere it wrapped into a negative "expected" count).
TEST(AgentxReader, HugeNumbersAreRejectedWithoutOverflow) {
  auto doc = nlohmann::json::parse(R"({
    "id": "x", "models": ["m"], "block_size": 64, "hash_id_scope": "local",
    "tool_tokens": 0, "system_tokens": 0,
    "requests": [{"t": 0.0, "type": "n", "model": "m", "in": 9223372036854775807, "out": 5,
                  "hash_ids": [], "input_types": [], "output_types": [], "stop": ""}]})");
  try {
    parse_agentx_session(doc, "big.json");
    FAIL() << "accepted in=INT64_MAX without its hash ids";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "big.json: requests[0].hash_ids: 0 ids for in=9223372036854775807 with "
                 "block_size 64: expected 144115188075855871 or 144115188075855872");
  }
  doc["block_size"] = INT64_MAX;
  doc["requests"][0]["in"] = 10;
  doc["requests"][0]["hash_ids"] = {1};
  try {
    parse_agentx_session(doc, "big.json");
    FAIL() << "accepted block_size INT64_MAX";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "big.json: block_size: 9223372036854775807 is not in [1, 1048576]");
  }
}

TEST(AgentxReader, SubagentKeepsEveryField) {
  auto sessions = load_agentx(kTraces + "/agentx/trace_0010.json");
  ASSERT_EQ(sessions.size(), 1u);
  const AgentxSession& s = sessions[0];
  ASSERT_EQ(s.subagents.size(), 4u);
  const AgentxSubagent& a = s.subagents[0];
  EXPECT_EQ(a.agent_id, "agent_001");
  EXPECT_EQ(a.subagent_type, "Explore");
  EXPECT_EQ(a.duration_ms, 91243);
  EXPECT_EQ(a.total_tokens, 101961);
  EXPECT_EQ(a.tool_use_count, 23);
  EXPECT_EQ(a.models, std::vector<std::string>{"claude-haiku-4-5-20251001"});
  EXPECT_EQ(a.tool_tokens, 7771);
  EXPECT_EQ(a.system_tokens, 2227);
  EXPECT_DOUBLE_EQ(a.t, 100.65);
  EXPECT_NEAR(a.start_s(), 9.407, 1e-9);
  EXPECT_EQ(a.requests.size(), 7u);
  EXPECT_EQ(s.requests[0].stop, "tool_use");
  EXPECT_DOUBLE_EQ(*s.requests[0].api_time, 8.81);
}

// A small session with one subagent entry between its two turns; `subagent` replaces that
// entry's fields.
nlohmann::json hand_made_session(const std::string& id, const nlohmann::json& subagent) {
  auto doc = nlohmann::json::parse(R"({
    "models": ["m"], "block_size": 64, "hash_id_scope": "local",
    "tool_tokens": 0, "system_tokens": 0,
    "requests": [
      {"t": 0.0, "type": "n", "model": "m", "in": 130, "out": 5, "hash_ids": [1, 2],
       "input_types": ["text"], "output_types": ["text"], "stop": "tool_use", "api_time": 1.0},
      {"t": 1.5, "type": "subagent", "agent_id": "agent_bg", "subagent_type": "general-purpose",
       "status": "completed", "duration_ms": 300, "total_tokens": 9, "tool_use_count": 1,
       "models": ["m"], "requests": [
         {"t": 0.0, "type": "n", "model": "m", "in": 64, "out": 7, "hash_ids": [9],
          "input_types": [], "output_types": [], "stop": "end_turn", "api_time": 2.0}]},
      {"t": 4.0, "type": "n", "model": "m", "in": 200, "out": 5, "hash_ids": [1, 2, 3],
       "input_types": ["text"], "output_types": ["text"], "stop": "end_turn", "api_time": 1.0}
    ]})");
  doc["id"] = id;
  if (subagent.is_object()) doc["requests"][1].update(subagent);  // `{}` arrives as null
  return doc;
}

TEST(AgentxReader, BackgroundSubagentsLoadWithTheirNullCounts) {
  // The public corpus's background subagents: async_launched, duration_ms, total_tokens and
  // tool_use_count null. Their `t` is the launch.
  auto doc = hand_made_session("bg", {{"status", "async_launched"},
                                      {"duration_ms", nullptr},
                                      {"total_tokens", nullptr},
                                      {"tool_use_count", nullptr}});
  AgentxSession s = parse_agentx_session(doc, "bg.json");
  ASSERT_EQ(s.subagents.size(), 1u);
  const AgentxSubagent& a = s.subagents[0];
  EXPECT_TRUE(a.background());
  EXPECT_FALSE(a.duration_ms);
  EXPECT_FALSE(a.total_tokens);
  EXPECT_FALSE(a.tool_use_count);
  EXPECT_DOUBLE_EQ(a.start_s(), 1.5);
  EXPECT_DOUBLE_EQ(a.end_s(), 3.5);  // no recorded end: its last call's, 1.5 + 0 + 2
  ASSERT_EQ(a.requests.size(), 1u);

  // Its own calls may be missing altogether: a background stream with nothing to send.
  auto bare = doc;
  bare["requests"][1].erase("requests");
  bare["requests"][1].erase("models");
  EXPECT_TRUE(parse_agentx_session(bare, "bare.json").subagents[0].requests.empty());

  // A completed subagent keeps its duration: start = t - duration.
  AgentxSession done = parse_agentx_session(hand_made_session("done", {}), "done.json");
  EXPECT_FALSE(done.subagents[0].background());
  EXPECT_DOUBLE_EQ(done.subagents[0].start_s(), 1.2);
}

// Writes `text` to dir/name.
void write_file(const std::filesystem::path& dir, const std::string& name,
                const std::string& text) {
  std::ofstream(dir / name) << text;
}

TEST(AgentxReader, UnusableFilesAreSkippedWithTheirFileEntryAndFieldUnlessStrict) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("paceline-agentx-skip-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_file(dir, "a_good.json", hand_made_session("a_good", {}).dump());
  write_file(dir, "b_background.json",
             hand_made_session("b_background", {{"status", "async_launched"},
                                                {"duration_ms", nullptr},
                                                {"total_tokens", nullptr},
                                                {"tool_use_count", nullptr}})
                 .dump());
  // A joined subagent without its duration cannot be placed in time.
  write_file(dir, "c_no_duration.json",
             hand_made_session("c_no_duration", {{"duration_ms", nullptr}}).dump());
  write_file(dir, "d_truncated.json", hand_made_session("d_truncated", {}).dump().substr(0, 80));
  write_file(dir, "e_bad_type.json", hand_made_session("e_bad_type", {{"t", "late"}}).dump());

  std::vector<TraceSkip> skipped;
  std::vector<AgentxSession> sessions = load_agentx(dir.string(), false, &skipped);
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[0].id, "a_good");
  EXPECT_EQ(sessions[1].id, "b_background");
  ASSERT_EQ(skipped.size(), 3u);
  EXPECT_EQ(skipped[0].file, "c_no_duration.json");
  EXPECT_EQ(skipped[0].reason,
            "c_no_duration.json: requests[1].duration_ms: null on a subagent with status "
            "'completed' (only async_launched subagents run in the background without one)");
  EXPECT_EQ(skipped[1].file, "d_truncated.json");
  EXPECT_NE(skipped[1].reason.find("d_truncated.json: not valid JSON"), std::string::npos)
      << skipped[1].reason;
  EXPECT_EQ(skipped[2].reason, "e_bad_type.json: requests[1].t: expected a number, found string");

  // Strict: the first unusable file is the error.
  try {
    load_agentx(dir.string(), true);
    FAIL() << "strict reading accepted " << dir;
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), skipped[0].reason);
  }

  // Nothing usable left is an error, not an empty run.
  fs::remove(dir / "a_good.json");
  fs::remove(dir / "b_background.json");
  EXPECT_THROW(load_agentx(dir.string()), Error);
  fs::remove_all(dir);
}

// --- Mooncake ---------------------------------------------------------------------------------

struct MooncakeFile {
  const char* name;
  size_t records;
  double last_timestamp_ms;
};

class MooncakeTraces : public ::testing::TestWithParam<MooncakeFile> {};

TEST_P(MooncakeTraces, InvariantsHold) {
  const MooncakeFile& file = GetParam();
  auto records = load_mooncake(kTraces + "/" + file.name);
  ASSERT_EQ(records.size(), file.records);
  EXPECT_EQ(*records.back().timestamp_ms, file.last_timestamp_ms);
  double last = 0;
  int64_t max_id = -1;
  std::unordered_map<int64_t, int64_t> predecessor;
  for (const auto& r : records) {
    ASSERT_TRUE(r.timestamp_ms) << "line " << r.line;
    EXPECT_GE(*r.timestamp_ms, last) << "line " << r.line;    // arrivals never go back
    EXPECT_EQ(*r.timestamp_ms, std::floor(*r.timestamp_ms));  // whole ms
    last = *r.timestamp_ms;
    EXPECT_GT(r.input_length, 0);
    EXPECT_GT(r.output_length, 0);
    EXPECT_FALSE(r.session_id);
    EXPECT_FALSE(r.delay_ms);
    // n ids for (n-1)*512 < input_length <= n*512.
    auto n = static_cast<int64_t>(r.hash_ids.size());
    EXPECT_EQ(n, (r.input_length + kMooncakeBlockSize - 1) / kMooncakeBlockSize)
        << "line " << r.line;
    std::set<int64_t> distinct(r.hash_ids.begin(), r.hash_ids.end());
    EXPECT_EQ(distinct.size(), r.hash_ids.size()) << "line " << r.line;
    for (size_t i = 0; i < r.hash_ids.size(); ++i) {
      int64_t id = r.hash_ids[i];
      // Chained: an id always follows the same id. Ids are numbered in order of first use.
      int64_t prev = i == 0 ? -1 : r.hash_ids[i - 1];
      auto [it, fresh] = predecessor.try_emplace(id, prev);
      EXPECT_EQ(it->second, prev) << "line " << r.line;
      if (fresh) {
        EXPECT_EQ(id, max_id + 1) << "line " << r.line;
        max_id = id;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BothFiles, MooncakeTraces,
                         ::testing::Values(MooncakeFile{"conversation_trace.jsonl", 12031, 3536999},
                                           MooncakeFile{"synthetic_trace.jsonl", 3993, 1022025}));

TEST(MooncakeReader, ReadsSessionExtensionsAndNamesLines) {
  auto r = parse_mooncake_line(
      R"({"timestamp": 5, "input_length": 600, "output_length": 3, "hash_ids": [0, 1], "session_id": "a", "delay": 250})",
      "x.jsonl:1");
  EXPECT_EQ(*r.timestamp_ms, 5);
  EXPECT_EQ(*r.session_id, "a");
  EXPECT_EQ(*r.delay_ms, 250);
  try {
    parse_mooncake_line(R"({"timestamp": 5, "input_length": 600, "hash_ids": [0, 1]})",
                        "x.jsonl:7");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "x.jsonl:7: output_length: missing required field");
  }
  try {
    parse_mooncake_line("{not json", "x.jsonl:9");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("x.jsonl:9: not valid JSON", 0), 0u) << e.what();
  }
}

// Found by fuzz/mooncake_trace_fuzz.cpp: a number too large for a double is an out_of_range from
// the JSON parser, not a parse_error, and it escaped the readers without the file and line.
TEST(TraceReaders, ANumberBeyondDoubleIsAnErrorNamingTheLine) {
  try {
    parse_mooncake_line(R"({"timestamp": 1e999, "input_length": 1, "output_length": 1})",
                        "x.jsonl:3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("x.jsonl:3: not valid JSON", 0), 0u) << e.what();
  }
  auto file = std::filesystem::temp_directory_path() / "paceline_agentx_1e999.json";
  std::ofstream(file) << R"({"id": "x", "block_size": 1e999})";
  // --strict: the file's own error; without it the file is skipped with that error, counted.
  try {
    load_agentx(file.string(), /*strict=*/true);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(file.string() + ": not valid JSON", 0), 0u) << e.what();
  }
  std::vector<TraceSkip> skipped;
  EXPECT_THROW(load_agentx(file.string(), /*strict=*/false, &skipped), Error);  // none usable
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].reason.find("not valid JSON"), std::string::npos) << skipped[0].reason;
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace paceline::bench
