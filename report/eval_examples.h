// A few validation lines as the model saw them at an evaluation: the points around the line,
// the perturbed input, the refined line and the truth, in the line's own frame (after the
// pipeline's center stage), and the three lines again in world coordinates (double). The
// trainer writes them to RUN_DIR/eval_examples.json at each evaluation; the run report draws
// them top-down.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sl::report {

struct EvalExample {
  int32_t scene = -1, line = -1;  // provenance: scene index in the validation folder, line index
  std::vector<float> context;     // [P,3]: x, y and intensity (0 when the batch has none)
  std::vector<float> noisy, refined, truth;  // [L,3]
  double err_before_m = 0, err_after_m = 0;  // mean point error to the true line
  // The same three lines in world coordinates ([L,3], double; the scene's origin added back to
  // the line frame's position): where they are on the map. Empty when the batch had no "frame".
  std::vector<double> noisy_world, refined_world, truth_world;
};

struct EvalExamples {
  int64_t step = 0, epoch = 0;
  std::vector<EvalExample> lines;
};

// How many lines an evaluation keeps for the report: the first ones of the validation split,
// which is read unshuffled, so every evaluation of a run shows the same lines.
constexpr size_t kReportExamples = 4;

// Whether (scene, line) is not among the kept examples yet: the pieces of one long line come
// one after another, and four pieces of one line would show one place four times.
bool is_new_line(const EvalExamples& e, int32_t scene, int32_t line);

// One example from a batch row: context [P,C] (C >= 3: x, y, z, then intensity when C >= 4),
// noisy line, predicted offset and true line [L,3].
EvalExample make_eval_example(const float* context, int64_t P, int64_t C, const float* noisy, const float* pred,
                              const float* truth, int64_t L, int32_t scene, int32_t line);

std::string to_json(const EvalExamples& e);
// Throws sl::Error naming `path` and the reason when the text is not such a file.
EvalExamples parse_eval_examples(const std::string& text, const std::string& path);

}  // namespace sl::report
