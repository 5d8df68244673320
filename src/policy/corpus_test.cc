// Replays the data-driven corpus in testdata/*.ndjson: each line is a decision case and the answer
// the Cedar reference (@cedar-policy/cedar-wasm 4.13) gave for it; ours must be the same decision,
// determining policies and erroring policies (or a failure where the reference failed).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "policy/cases.h"

namespace govern::policy {
namespace {

TEST(CorpusTest, EveryCaseMatchesTheReference) {
  int files = 0, cases = 0;
  for (const auto& entry : std::filesystem::directory_iterator(GOVERN_POLICY_TESTDATA)) {
    if (entry.path().extension() != ".ndjson") continue;
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    int line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (line.empty()) continue;
      ++cases;
      nlohmann::json c = nlohmann::json::parse(line);
      nlohmann::json expected = c["expected"];
      nlohmann::json got = nlohmann::json::parse(EvalCaseLine(line));
      std::string where = entry.path().filename().string() + ":" + std::to_string(line_no) + " " +
                          c["policies"].get<std::string>().substr(0, 160);
      if (expected.contains("failure")) {
        EXPECT_TRUE(got.contains("failure")) << where << "\n got " << got.dump();
        continue;
      }
      ASSERT_FALSE(got.contains("failure")) << where << "\n got " << got.dump();
      EXPECT_EQ(got["decision"], expected["decision"]) << where;
      EXPECT_EQ(got["reason"], expected["reason"]) << where;
      EXPECT_EQ(got["errors"], expected["errors"]) << where;
    }
  }
  EXPECT_GE(files, 2);
  EXPECT_GE(cases, 200);
}

}  // namespace
}  // namespace govern::policy
