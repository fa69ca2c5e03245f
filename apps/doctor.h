// `streamline doctor`: versions, devices, what the engine will use, and why. The run report
// records the same text (apps/run_report.cpp).
#pragma once
#include <string>

namespace sl {

std::string doctor_report();

}  // namespace sl
