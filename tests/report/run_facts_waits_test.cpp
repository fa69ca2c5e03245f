// run.json keeps the run table's CPU use and waiting figures (graph/engine.h: CpuUse,
// StageReport's order_wait_s and fork figures), and the report's stage section shows them; a
// run.json written before they existed reads as "not recorded", not as zeros that look measured.
#include <gtest/gtest.h>

#include "report/report.h"
#include "report/run_facts.h"

namespace sl::report {
namespace {

RunFacts facts_with_waits() {
  RunFacts f;
  f.status = "finished";
  f.wall_s = 10;
  f.peak_rss_bytes = 1 << 20;
  StageReport src, group, batch;
  src.id = "scan", src.type = "scan_dataset", src.serial = true, src.wait_output_s = 9.5;
  group.id = "group", group.type = "group_points", group.threads = 2, group.busy_s = 8;
  group.fork_s = 7.5, group.fork_tail_s = 1.5, group.piece_s = 12.25;
  batch.id = "batch", batch.type = "batch", batch.serial = true, batch.order_wait_s = 2.75;
  f.stages = {src, group, batch};
  f.cpu.user_s = 14.5, f.cpu.system_s = 0.5, f.cpu.cores = 2, f.cpu.affinity_cpus = 2, f.cpu.core_s = 20;
  f.cpu.startup_s = 1, f.cpu.startup_cpu_s = 0.5, f.cpu.startup_core_s = 2;
  return f;
}

TEST(ReportWaits, RunJsonKeepsTheCpuUseAndWaitingFigures) {
  const RunFacts f = facts_with_waits();
  const RunFacts g = parse_run_facts(to_json(f), "run.json");
  EXPECT_EQ(g.cpu.user_s, 14.5);
  EXPECT_EQ(g.cpu.system_s, 0.5);
  EXPECT_EQ(g.cpu.core_s, 20);
  EXPECT_EQ(g.cpu.cores, 2);
  EXPECT_EQ(g.cpu.affinity_cpus, 2);
  EXPECT_EQ(g.cpu.startup_s, 1);
  EXPECT_EQ(g.cpu.startup_cpu_s, 0.5);
  EXPECT_EQ(g.cpu.startup_core_s, 2);
  EXPECT_DOUBLE_EQ(g.cpu.use(), 0.75);
  ASSERT_EQ(g.stages.size(), 3u);
  EXPECT_EQ(g.stages[0].wait_output_s, 9.5);
  EXPECT_EQ(g.stages[1].fork_s, 7.5);
  EXPECT_EQ(g.stages[1].fork_tail_s, 1.5);
  EXPECT_EQ(g.stages[1].piece_s, 12.25);
  EXPECT_EQ(g.stages[2].order_wait_s, 2.75);
  // A run.json from before: no CPU figures, and the report leaves the line out.
  RunFacts old = f;
  old.cpu = CpuUse{};
  const RunFacts h = parse_run_facts(to_json(old), "run.json");
  EXPECT_EQ(h.cpu.core_s, 0);
  EXPECT_EQ(h.cpu.startup_s, -1);
}

TEST(ReportWaits, TheStageSectionShowsTheCpuLineOrderAndTail) {
  RunData run;
  run.dir = "/tmp/run_facts_waits";  // only named on the page
  run.facts = facts_with_waits();
  const std::string html = render_html(run);
  EXPECT_NE(html.find("<p data-metric=\"cpu_use\">CPU: 14.50 s user + 0.50 s system = 75% of 2 cores"), std::string::npos);
  EXPECT_NE(html.find("start-up (until the first item reached &#39;batch&#39;: 1.00 s) 25%, then 81%"), std::string::npos)
      << html.substr(html.find("cpu_use"), 400);
  EXPECT_NE(html.find("<th>order s</th><th>tail %</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>2.75</td><td>-</td></tr>"), std::string::npos) << "batch: order s, no fork-joins";
  EXPECT_NE(html.find("<td>-</td><td>20%</td></tr>"), std::string::npos) << "group: not serial, tail 1.5 / 7.5";
  RunData old = run;
  old.facts->cpu = CpuUse{};
  EXPECT_EQ(render_html(old).find("data-metric=\"cpu_use\""), std::string::npos);
}

}  // namespace
}  // namespace sl::report
