// Top-down pictures of a scene, for eyeballing generated data and for the docs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/message.h"

namespace sl {

// A size_px x size_px RGB PNG looking down the z axis (x to the right, y up). Points are drawn
// one pixel each, gray by intensity (sqrt-scaled so dark asphalt stays visible; the brightest
// point of a pixel wins, so thin bright markings survive); polylines on top, blended, in a
// colour per category (painted lines orange: line_thin, line_thick, lane_marking; curbs cyan:
// curbstone, curb; road_border green; stop_line red; anything else magenta) with their
// vertices as dots. meters = side of the square shown, centred on the world's (0, 0) (the sensor
// of a LiDAR frame; the lines are in the cloud's local frame); 0 fits the points' bounding box. Written atomically; throws sl::Error on bad arguments or I/O.
void render_topdown_png(const PointCloud& cloud, const std::vector<Polyline>& lines, const std::string& path,
                        int size_px = 1024, float meters = 0);

// The PNG bytes of an 8-bit RGB image (rows top to bottom), via libpng.
std::string encode_png_rgb(const std::vector<uint8_t>& rgb, int width, int height);

}  // namespace sl
