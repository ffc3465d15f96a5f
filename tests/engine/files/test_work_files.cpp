// The rules over input_files and output_files (paths confined to the work dir), the files request
// the runner reads, and MIME types.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/files/work_files.h"

using engine::check_files;
using engine::check_work_path;
using engine::InputFile;

TEST_CASE("a work path is relative, stays inside and is normalised", "[work-files]") {
  CHECK(check_work_path("a.txt", false).path == "a.txt");
  CHECK(check_work_path("./data/./in.csv", false).path == "data/in.csv");
  CHECK(check_work_path("out/**/*.png", true).path == "out/**/*.png");
  for (const char* bad : {"", "/etc/passwd", "..", "../x", "a/../../b", "a/..", "a//b", "a/", ".", "./."}) {
    INFO(bad);
    const auto checked = check_work_path(bad, false);
    CHECK_FALSE(checked.error.empty());
    CHECK(checked.path.empty());
  }
  CHECK_THAT(check_work_path("../x", false).error, Catch::Contains("leaves the work dir"));
  CHECK_THAT(check_work_path("/x", false).error, Catch::Contains("absolute"));
  CHECK_FALSE(check_work_path(std::string("a\0b", 3), false).error.empty());
  CHECK_FALSE(check_work_path("a**b/c", true).error.empty());  // ** only as a whole component
  CHECK_FALSE(check_work_path(std::string(300, 'x'), false).error.empty());
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "d/";
  deep += "f";
  CHECK_THAT(check_work_path(deep, false).error, Catch::Contains("deeper"));
  CHECK_FALSE(check_work_path(std::string(2000, 'a'), false).error.empty());
}

TEST_CASE("check_files names the argument and refuses a path given twice or used as a directory", "[work-files]") {
  std::vector<std::string> globs = {"./out/*.csv"};
  std::vector<InputFile> inputs = {{"./a/b.txt", "x"}, {"c", "y"}};
  CHECK_FALSE(check_files(inputs, globs));
  CHECK(inputs[0].path == "a/b.txt");
  CHECK(globs[0] == "out/*.csv");

  std::vector<std::string> none;
  std::vector<InputFile> twice = {{"a", "1"}, {"./a", "2"}};
  CHECK_THAT(*check_files(twice, none), Catch::Contains("given twice"));
  std::vector<InputFile> file_and_dir = {{"a", "1"}, {"a/b", "2"}};
  CHECK_THAT(*check_files(file_and_dir, none), Catch::Contains("needs it as a directory"));
  std::vector<InputFile> siblings = {{"a", "1"}, {"ab/c", "2"}, {"a.txt", "3"}};
  CHECK_FALSE(check_files(siblings, none));

  std::vector<InputFile> escape = {{"../x", "1"}};
  CHECK_THAT(*check_files(escape, none), Catch::StartsWith("Invalid argument 'input_files'"));
  std::vector<std::string> bad_glob = {"/etc/*"};
  std::vector<InputFile> no_inputs;
  CHECK_THAT(*check_files(no_inputs, bad_glob), Catch::StartsWith("Invalid argument 'output_files'"));

  std::vector<InputFile> many(engine::kMaxInputFiles + 1, InputFile{"f", ""});
  CHECK_THAT(*check_files(many, none), Catch::Contains("at most"));
  std::vector<std::string> many_globs(engine::kMaxOutputGlobs + 1, "*");
  CHECK_THAT(*check_files(no_inputs, many_globs), Catch::Contains("at most"));
}

TEST_CASE("the files request is laid out as the runner reads it", "[work-files]") {
  engine::FilesRequest request;
  request.inputs = {{"in.txt", std::string("a\0b", 3)}};
  request.output_globs = {"*.csv"};
  request.max_output_bytes = 0x0102;
  request.max_output_files = 3;
  const std::string bytes = engine::encode_files_request(request);
  const std::string expected = std::string("MPESF2\n") + std::string("\x01\0\0\0", 4) + std::string("\x06\0\0\0", 4) +
                               "in.txt" + std::string("\x03\0\0\0\0\0\0\0", 8) + std::string("a\0b", 3) +
                               std::string("\x01\0\0\0", 4) + std::string("\x05\0\0\0", 4) + "*.csv" +
                               std::string("\x02\x01\0\0\0\0\0\0", 8) + std::string("\x03\0\0\0", 4) +
                               std::string("\x00\x04\0\0", 4) + std::string("\x20\0\0\0", 4);  // 1024, 32
  CHECK(bytes == expected);
}

TEST_CASE("MIME types by extension; which are returned as text", "[work-files]") {
  CHECK(engine::mime_type_for("out/table.CSV") == "text/csv");
  CHECK(engine::mime_type_for("a.png") == "image/png");
  CHECK(engine::mime_type_for("data.json") == "application/json");
  CHECK(engine::mime_type_for("noext") == "application/octet-stream");
  CHECK(engine::mime_type_for(".hidden") == "application/octet-stream");
  CHECK(engine::mime_type_for("dir.d/file") == "application/octet-stream");
  CHECK(engine::is_textual_mime("text/csv"));
  CHECK(engine::is_textual_mime("application/json"));
  CHECK_FALSE(engine::is_textual_mime("image/png"));
  CHECK_FALSE(engine::is_textual_mime("application/octet-stream"));
}
