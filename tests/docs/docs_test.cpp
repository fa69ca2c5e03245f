// Docs that cannot rot: the shell blocks README.md and docs/*.md mark runnable are run, and their
// relative links are followed.
//
// The convention (docs/README.md, "Docs that run"): a fenced block whose info string is `sh run`
// is run by DocsCommands.*, page by page, every block of a page in order in one fresh folder
// (generated data only: each page makes what it uses), with `streamline` on PATH and `pipelines/`,
// `examples/` and `build/` (the binary's folder) beside it; a block tagged `text expect` right
// after it lists lines its output must contain ("..." lines skipped); a `json pipeline` block is
// checked with `streamline validate` there. A shell block that does not run is tagged `sh norun`;
// an untagged shell block is an error, so none is forgotten. A block tagged `from=PATH` quotes
// that source file: its lines are the file's, in order. DocsLinks.* follows every relative link
// and #anchor (GitHub's heading slugs) of the same pages, and every source path in a code span.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace sl {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// A fenced code block of a Markdown page: its info string split into words (the language first,
// then tags such as `run`), the 1-based line of its opening fence and its text.
struct Block {
  int line = 0;
  std::vector<std::string> info;
  std::string text;
  bool has(const std::string& tag) const { return std::find(info.begin() + (info.empty() ? 0 : 1), info.end(), tag) != info.end(); }
  std::string lang() const { return info.empty() ? "" : info[0]; }
};

// The fenced blocks of a page (``` or ~~~, indented or not, as in list items) and, in `prose`, the
// page with every block's lines blanked, so that links and headings are looked for outside code.
std::vector<Block> fenced_blocks(const std::string& page, std::vector<std::string>* prose = nullptr) {
  std::vector<Block> out;
  const auto lines = lines_of(page);
  if (prose) *prose = lines;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    const size_t indent = l.find_first_not_of(' ');
    if (indent == std::string::npos || indent > 3 + 8) continue;
    const char c = l[indent];
    if (c != '`' && c != '~') continue;
    size_t n = indent;
    while (n < l.size() && l[n] == c) ++n;
    if (n - indent < 3) continue;
    const std::string fence(n - indent, c);
    Block b;
    b.line = int(i) + 1;
    std::istringstream words(l.substr(n));
    for (std::string w; words >> w;) b.info.push_back(w);
    size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      const std::string t = trim(lines[j]);
      if (t.size() >= fence.size() && t.compare(0, fence.size(), fence) == 0 && t.find_first_not_of(c) == std::string::npos) break;
      const std::string& body = lines[j];
      const size_t strip = std::min(indent, body.find_first_not_of(' ') == std::string::npos ? body.size() : body.find_first_not_of(' '));
      b.text += body.substr(strip) + "\n";
    }
    if (prose)
      for (size_t k = i; k <= j && k < lines.size(); ++k) (*prose)[k].clear();
    out.push_back(std::move(b));
    i = j;
  }
  return out;
}

// GitHub's anchor of a heading: lower case, punctuation dropped (letters, digits, '_', '-' and
// non-ASCII kept), spaces as '-'.
std::string github_slug(const std::string& heading) {
  std::string s;
  for (unsigned char ch : heading) {
    if (ch >= 0x80 || std::isalnum(ch) || ch == '_' || ch == '-') s += char(std::tolower(ch));
    else if (ch == ' ') s += '-';
  }
  return s;
}

// The anchors of a page's headings (ATX, outside code), duplicates numbered as GitHub does.
std::set<std::string> anchors(const std::string& page) {
  std::vector<std::string> prose;
  fenced_blocks(page, &prose);
  std::set<std::string> out;
  std::map<std::string, int> seen;
  for (const auto& l : prose) {
    const size_t h = l.find_first_not_of('#');
    if (h == 0 || h == std::string::npos || h > 6 || l[h] != ' ') continue;
    std::string text = trim(l.substr(h));
    while (!text.empty() && text.back() == '#') text.pop_back();  // a closing sequence
    const std::string slug = github_slug(trim(text));
    const int k = seen[slug]++;
    out.insert(k == 0 ? slug : slug + "-" + std::to_string(k));
  }
  return out;
}

// A relative link of a page: where it is and what it points to.
struct Link {
  int line = 0;
  std::string target;
};

// The targets of inline links and images (`](target)`, the text may wrap lines) and of reference
// definitions (`[name]: target`), outside code blocks and code spans.
std::vector<Link> links(const std::string& page) {
  std::vector<std::string> prose;
  fenced_blocks(page, &prose);
  std::vector<Link> out;
  for (size_t i = 0; i < prose.size(); ++i) {
    std::string l = prose[i];
    for (size_t a = l.find('`'); a != std::string::npos; a = l.find('`')) {  // drop code spans
      size_t n = a;
      while (n < l.size() && l[n] == '`') ++n;
      const size_t b = l.find(std::string(n - a, '`'), n);
      l.erase(a, b == std::string::npos ? std::string::npos : b + (n - a) - a);
    }
    for (size_t at = l.find("]("); at != std::string::npos; at = l.find("](", at + 2)) {
      const size_t end = l.find(')', at);
      if (end == std::string::npos) continue;
      std::string t = trim(l.substr(at + 2, end - at - 2));
      if (const size_t sp = t.find(' '); sp != std::string::npos) t = t.substr(0, sp);  // a "title"
      if (t.size() > 1 && t.front() == '<' && t.back() == '>') t = t.substr(1, t.size() - 2);
      out.push_back({int(i) + 1, t});
    }
    const std::string t = trim(l);
    if (const size_t c = t.find("]: "); !t.empty() && t[0] == '[' && c != std::string::npos) out.push_back({int(i) + 1, trim(t.substr(c + 3))});
  }
  return out;
}

bool external(const std::string& t) {
  return t.find("://") != std::string::npos || t.rfind("mailto:", 0) == 0;
}

// README.md and docs/*.md, as paths relative to the source tree, README first.
std::vector<std::string> doc_pages() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(fs::path(SL_SOURCE_DIR) / "docs"))
    if (e.path().extension() == ".md") out.push_back("docs/" + e.path().filename().string());
  std::sort(out.begin(), out.end());
  out.insert(out.begin(), "README.md");
  return out;
}

bool is_shell(const Block& b) { return b.lang() == "sh" || b.lang() == "bash" || b.lang() == "shell" || b.lang() == "console"; }

// ---- the reading of pages, on small texts ----

TEST(DocsMarkdown, FencedBlocksKeepTheirInfoTagsLineAndTextAndIndentedOnesLoseTheirIndent) {
  const std::string page =
      "# t\n"
      "```sh run\n"
      "streamline doctor\n"
      "```\n"
      "* item\n"
      "  ```text expect\n"
      "  line a\n"
      "    line b\n"
      "  ```\n"
      "````md\n"
      "```sh\n"
      "````\n";
  const auto b = fenced_blocks(page);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].line, 2);
  EXPECT_EQ(b[0].lang(), "sh");
  EXPECT_TRUE(b[0].has("run"));
  EXPECT_EQ(b[0].text, "streamline doctor\n");
  EXPECT_EQ(b[1].line, 6);
  EXPECT_TRUE(b[1].has("expect"));
  EXPECT_FALSE(b[1].has("text"));
  EXPECT_EQ(b[1].text, "line a\n  line b\n");
  EXPECT_EQ(b[2].text, "```sh\n") << "a longer fence holds a shorter one";
}

TEST(DocsMarkdown, AnchorsAreGitHubsSlugsNumberedWhenRepeatedAndHeadingsInCodeAreNone) {
  EXPECT_EQ(github_slug("A tiled map: Autoware's `pointcloud_map/`, LAS tiles"), "a-tiled-map-autowares-pointcloud_map-las-tiles");
  EXPECT_EQ(github_slug("Errors, Ctrl-C, resume"), "errors-ctrl-c-resume");
  EXPECT_EQ(github_slug("From PyTorch"), "from-pytorch");
  const auto a = anchors("# Notes\n## Notes\n```sh\n# not a heading\n```\n#not either\n### Run & stop ###\n");
  EXPECT_EQ(a, (std::set<std::string>{"notes", "notes-1", "run--stop"}));
}

TEST(DocsMarkdown, LinksAreFoundAcrossWrappedTextButNotInCode) {
  const std::string page =
      "See [the data\n"
      "page](docs/data.md#coordinates) and ![a picture](scene.png \"title\") and `[x](not.md)`.\n"
      "```\n[y](code.md)\n```\n"
      "[ref]: docs/python.md\n"
      "[web](https://example.org)\n";
  const auto l = links(page);
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0].line, 2);
  EXPECT_EQ(l[0].target, "docs/data.md#coordinates");
  EXPECT_EQ(l[1].target, "scene.png");
  EXPECT_EQ(l[2].line, 6);
  EXPECT_EQ(l[2].target, "docs/python.md");
  EXPECT_TRUE(external(l[3].target));
}

// ---- the pages ----

TEST(DocsLinks, EveryRelativeLinkOfTheReadmeAndDocsNamesAFileOrHeadingThatExists) {
  const fs::path src = SL_SOURCE_DIR;
  size_t checked = 0;
  for (const auto& page : doc_pages()) {
    const std::string text = slurp(src / page);
    for (const auto& l : links(text)) {
      if (external(l.target)) continue;
      const size_t hash = l.target.find('#');
      const std::string file = l.target.substr(0, hash), anchor = hash == std::string::npos ? "" : l.target.substr(hash + 1);
      const fs::path target = file.empty() ? src / page : (src / page).parent_path() / file;
      ++checked;
      if (!fs::exists(target)) {
        ADD_FAILURE() << page << ":" << l.line << ": " << l.target << ": no such file (" << fs::relative(target, src).string() << ")";
        continue;
      }
      if (anchor.empty()) continue;
      if (target.extension() != ".md") {
        ADD_FAILURE() << page << ":" << l.line << ": " << l.target << ": an anchor into a file that is not Markdown";
        continue;
      }
      if (!anchors(slurp(target)).count(anchor))
        ADD_FAILURE() << page << ":" << l.line << ": " << l.target << ": " << fs::relative(target, src).string()
                      << " has no heading whose anchor is #" << anchor;
    }
  }
  EXPECT_GT(checked, 50u) << "the pages link to each other";
}

// The paths of source files named in code spans (`formats/clouds/las.h`): a word that starts with
// one of the tree's top folders and ends in a source extension. What a user's run writes
// (`runs/...`, `build/...`, generated data under `data/<name>/`) is not looked for.
std::vector<Link> source_paths(const std::string& page) {
  static const std::set<std::string> exts = {".h", ".cpp", ".cu", ".py", ".md", ".json", ".txt", ".yaml", ".in", ".dict"};
  std::set<std::string> tops;
  for (const auto& e : fs::directory_iterator(SL_SOURCE_DIR)) {
    const std::string n = e.path().filename().string();
    if (e.is_directory() && n[0] != '.' && n.rfind("build", 0) != 0 && n != "runs" && n != "out") tops.insert(n);
  }
  std::vector<std::string> prose;
  fenced_blocks(page, &prose);
  std::vector<Link> out;
  for (size_t i = 0; i < prose.size(); ++i) {
    const std::string& l = prose[i];
    for (size_t a = l.find('`'); a != std::string::npos; a = l.find('`', a + 1)) {
      const size_t b = l.find('`', a + 1);
      if (b == std::string::npos) break;
      std::istringstream words(l.substr(a + 1, b - a - 1));
      for (std::string w; words >> w;) {
        while (!w.empty() && std::string(",;:)").find(w.back()) != std::string::npos) w.pop_back();
        const size_t slash = w.find('/');
        if (slash == std::string::npos || !tops.count(w.substr(0, slash)) || !exts.count(fs::path(w).extension().string())) continue;
        if (w.find_first_of("<>*{}%") != std::string::npos) continue;  // a pattern, not a file
        if (w.rfind("data/", 0) == 0 && w.find('/', 5) != std::string::npos) continue;  // generated data
        out.push_back({int(i) + 1, w});
      }
      a = b;
    }
  }
  return out;
}

TEST(DocsMarkdown, SourcePathsAreTheWordsOfCodeSpansUnderATopFolderWithASourceExtension) {
  const auto p = source_paths("`formats/clouds/las.h` and `runs/x/metrics.json`, `geometry/crop.h:` `bench/results/` `tests/*.cpp`\n"
                                      "`data/map/train/scene_0000.json` `data/gen.h`\n");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].target, "formats/clouds/las.h");
  EXPECT_EQ(p[1].target, "geometry/crop.h");
  EXPECT_EQ(p[2].line, 2);
  EXPECT_EQ(p[2].target, "data/gen.h");
}

TEST(DocsLinks, EverySourcePathInACodeSpanOfTheReadmeAndDocsExists) {
  size_t checked = 0;
  for (const auto& page : doc_pages())
    for (const auto& p : source_paths(slurp(fs::path(SL_SOURCE_DIR) / page))) {
      ++checked;
      EXPECT_TRUE(fs::exists(fs::path(SL_SOURCE_DIR) / p.target)) << page << ":" << p.line << ": " << p.target << ": no such file";
    }
  EXPECT_GT(checked, 30u);
}

// The value of a block's `from=PATH` tag, or "".
std::string quoted_file(const Block& b) {
  for (const auto& w : b.info)
    if (w.rfind("from=", 0) == 0) return w.substr(5);
  return "";
}

// The first line of `quote` (1-based) that is not a line of `file` after the lines matched before it
// (both trimmed, blank lines of the quote skipped); 0 when every line is there in order.
int first_line_not_quoted(const std::string& quote, const std::string& file) {
  const auto have = lines_of(file);
  size_t at = 0;
  int n = 0;
  for (const auto& q : lines_of(quote)) {
    ++n;
    const std::string t = trim(q);
    if (t.empty()) continue;
    while (at < have.size() && trim(have[at]) != t) ++at;
    if (at == have.size()) return n;
    ++at;
  }
  return 0;
}

TEST(DocsMarkdown, AQuoteIsTheFilesLinesInOrderWithItsIndentAndBlankLinesFree) {
  const std::string file = "int f() {\n  return 1;\n}\n\nint g() { return 2; }\n";
  EXPECT_EQ(first_line_not_quoted("int f() {\nreturn 1;\n\n}\n", file), 0);
  EXPECT_EQ(first_line_not_quoted("int f() {\n  return 2;\n}\n", file), 2);
  EXPECT_EQ(first_line_not_quoted("int g() { return 2; }\nint f() {\n", file), 2) << "out of order";
}

TEST(DocsBlocks, EveryQuoteOfASourceFileIsItsCurrentText) {
  size_t quotes = 0;
  for (const auto& page : doc_pages())
    for (const Block& b : fenced_blocks(slurp(fs::path(SL_SOURCE_DIR) / page))) {
      const std::string from = quoted_file(b);
      if (from.empty()) continue;
      ++quotes;
      const fs::path file = fs::path(SL_SOURCE_DIR) / from;
      if (!fs::exists(file)) {
        ADD_FAILURE() << page << ":" << b.line << ": from=" << from << ": no such file";
        continue;
      }
      const int n = first_line_not_quoted(b.text, slurp(file));
      EXPECT_EQ(n, 0) << page << ":" << b.line + n << ": not in " << from << " (after the lines above it): "
                      << (n > 0 ? lines_of(b.text)[size_t(n - 1)] : "");
    }
  EXPECT_GE(quotes, 3u);
}

TEST(DocsBlocks, EveryShellBlockSaysWhetherItRunsAndEveryExpectFollowsARunBlock) {
  size_t run = 0;
  for (const auto& page : doc_pages()) {
    const auto blocks = fenced_blocks(slurp(fs::path(SL_SOURCE_DIR) / page));
    for (size_t i = 0; i < blocks.size(); ++i) {
      const Block& b = blocks[i];
      if (is_shell(b)) {
        EXPECT_NE(b.has("run"), b.has("norun")) << page << ":" << b.line << ": a shell block is tagged `" << b.lang()
                                                << " run` (the docs test runs it) or `" << b.lang() << " norun`";
        run += b.has("run");
      }
      if (b.has("expect")) {
        EXPECT_TRUE(i > 0 && blocks[i - 1].has("run")) << page << ":" << b.line << ": an `expect` block follows the block it checks";
      }
    }
  }
  EXPECT_GE(run, 10u);
}

// Runs `script` with bash in `cwd`; its exit status, stdout and stderr together in *out.
int run_bash(const fs::path& script, const fs::path& cwd, const fs::path& bin, std::string* out) {
  const fs::path log = script.string() + ".out";
  const std::string cmd = "cd '" + cwd.string() + "' && PATH='" + bin.string() + "':\"$PATH\" timeout 600 bash '" + script.string() +
                          "' >'" + log.string() + "' 2>&1";
  const int st = std::system(cmd.c_str());
  *out = slurp(log);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

class DocsCommands : public ::testing::TestWithParam<std::string> {};

// Every `sh run` block of one page, in order, in one fresh folder; each `text expect` block's lines
// found in the output of the block before it.
TEST_P(DocsCommands, RunInOrderInAFreshFolderWithStreamlineOnThePath) {
  const std::string page = GetParam();
  const fs::path src = SL_SOURCE_DIR;
  const auto blocks = fenced_blocks(slurp(src / page));
  struct Folder {  // a fresh folder of this process, removed at the end
    fs::path root;
    ~Folder() {
      std::error_code ec;
      fs::remove_all(root, ec);
    }
  } dir{fs::temp_directory_path() / ("sl_docs_" + std::to_string(::getpid()) + "_" + page.substr(page.rfind('/') + 1))};
  fs::remove_all(dir.root);
  const fs::path work = dir.root / "work", bin = dir.root / "bin", scripts = dir.root / "scripts";
  fs::create_directories(work);
  fs::create_directories(bin);
  fs::create_directories(scripts);
  fs::create_symlink(SL_CLI_PATH, bin / "streamline");
  fs::create_directory_symlink(fs::path(SL_CLI_PATH).parent_path(), work / "build");
  for (const char* d : {"pipelines", "examples"}) fs::create_directory_symlink(src / d, work / d);

  std::string out;  // of the last block run
  int last_run = 0;
  size_t ran = 0;
  for (const Block& b : blocks) {
    if (b.has("expect")) {
      if (last_run == 0) continue;  // reported by DocsBlocks.EveryShellBlockSaysWhetherItRuns...
      for (const auto& want : lines_of(b.text)) {
        const std::string w = trim(want);
        if (w.empty() || w == "...") continue;
        EXPECT_NE(out.find(w), std::string::npos)
            << page << ":" << b.line << ": the output of the block at line " << last_run << " lacks\n  " << w << "\noutput:\n" << out;
      }
      continue;
    }
    const bool pipeline = b.lang() == "json" && b.has("pipeline");
    if (!pipeline && (!is_shell(b) || !b.has("run"))) continue;
    const fs::path script = scripts / ("block_" + std::to_string(b.line) + ".sh");
    if (pipeline) {
      const fs::path json = scripts / ("pipeline_" + std::to_string(b.line) + ".json");
      std::ofstream(json) << b.text;
      std::ofstream(script) << "streamline validate '" << json.string() << "'\n";
    } else {  // the script's lines are the page's lines, so that $LINENO names the failing command's line
      std::ofstream(script) << "set -eo pipefail; trap 'echo \"" << page << ":$LINENO: this command failed\" >&2' ERR"
                            << std::string(size_t(b.line), '\n') << b.text;
    }
    const int code = run_bash(script, work, bin, &out);
    ++ran;
    last_run = b.line;
    if (code != 0) {
      ADD_FAILURE() << page << ":" << b.line << ": the block exits " << code << "\n--- its output ---\n" << out;
      return;  // what follows builds on it
    }
  }
  EXPECT_GT(ran, 0u) << page << " is listed as having runnable blocks";
}

// The pages that hold at least one `sh run` block.
std::vector<std::string> pages_that_run() {
  std::vector<std::string> out;
  for (const auto& page : doc_pages()) {
    const auto blocks = fenced_blocks(slurp(fs::path(SL_SOURCE_DIR) / page));
    if (std::any_of(blocks.begin(), blocks.end(), [](const Block& b) { return is_shell(b) && b.has("run"); })) out.push_back(page);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Pages, DocsCommands, ::testing::ValuesIn(pages_that_run()), [](const auto& info) {
  std::string name = info.param.substr(0, info.param.size() - 3);  // without ".md"
  std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum((unsigned char)c); }, '_');
  return name;
});

}  // namespace
}  // namespace sl
