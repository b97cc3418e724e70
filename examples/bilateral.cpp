// Bilateral filter on a grayscale image: each output pixel is the average of its (2R+1)^2
// neighbourhood, weighted by distance (a Gaussian of the offset) and by similarity (a Gaussian of
// the intensity difference), which smooths noise but keeps edges. One program per
// BLOCK_H x BLOCK_W block of pixels; the window loops are plain C++ loops over a constexpr radius,
// so tracing unrolls them and the spatial weights become constants. Neighbours outside the image
// are masked off and get no weight. Writes bilateral_in.pgm and bilateral_out.pgm.
#include <fstream>
#include <random>

#include "common.h"

namespace tl = tiledsl;

constexpr int kRadius = 3;
constexpr double kSigmaSpace = 2.0, kSigmaRange = 0.1;

double spatial_weight(int dy, int dx) { return std::exp(-(dy * dy + dx * dx) / (2 * kSigmaSpace * kSigmaSpace)); }

const tl::Kernel bilateral_kernel =
    tl::kernel("bilateral_kernel", {"img", "out", "H", "W", "stride", "range_coef", "BLOCK_H", "BLOCK_W"},
               [](tl::Ptr<float> img, tl::Ptr<float> out, tl::Int H, tl::Int W, tl::Int stride, tl::Float range_coef,
                  tl::Constexpr BLOCK_H, tl::Constexpr BLOCK_W) {
                 auto rows = (tl::program_id(0) * BLOCK_H + tl::arange(0, BLOCK_H))(tl::_, tl::newaxis);
                 auto cols = (tl::program_id(1) * BLOCK_W + tl::arange(0, BLOCK_W))(tl::newaxis, tl::_);
                 auto inside = (rows < H) & (cols < W);
                 auto center = tl::load(img + rows * stride + cols, inside, 0.0f);
                 auto num = tl::zeros<float>({BLOCK_H, BLOCK_W}), den = tl::zeros<float>({BLOCK_H, BLOCK_W});
                 for (int dy = -kRadius; dy <= kRadius; ++dy)
                   for (int dx = -kRadius; dx <= kRadius; ++dx) {
                     auto r = rows + dy, c = cols + dx;
                     auto valid = (r >= 0) & (r < H) & (c >= 0) & (c < W);
                     auto nb = tl::load(img + r * stride + c, valid, 0.0f);
                     auto diff = nb - center;
                     // range_coef = -log2(e) / (2 sigma_r^2), so exp2 gives the Gaussian of the difference.
                     auto space = static_cast<float>(spatial_weight(dy, dx));  // a trace-time constant
                     auto w = tl::where(valid, tl::exp2(diff * diff * range_coef) * space, 0.0f);
                     num += w * nb;
                     den += w;
                   }
                 // The centre tap always has weight 1, so den > 0 wherever the store writes.
                 tl::store(out + rows * stride + cols, num / den, inside);
               });

// Gradients, a bright disc, a dark bar and Gaussian noise, clamped to [0, 1].
std::vector<float> synthetic_image(int h, int w) {
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0.0f, 0.04f);
  std::vector<float> img(static_cast<size_t>(h) * w);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      double v = 0.2 + 0.3 * x / w + 0.2 * y / h;
      if ((x - 0.6 * w) * (x - 0.6 * w) + (y - 0.4 * h) * (y - 0.4 * h) < 0.04 * w * h) v = 0.85;
      if (x > 0.15 * w && x < 0.3 * w && y > 0.2 * h && y < 0.85 * h) v = 0.1;
      img[y * w + x] = std::clamp(static_cast<float>(v) + noise(rng), 0.0f, 1.0f);
    }
  return img;
}

void write_pgm(const std::string& path, const std::vector<double>& px, int h, int w) {
  std::ofstream f(path, std::ios::binary);
  f << "P5\n" << w << " " << h << "\n255\n";
  for (double v : px) f.put(static_cast<char>(std::lround(std::clamp(v, 0.0, 1.0) * 255)));
  if (!f) throw tl::Error("cannot write " + path);
}

int main() {
  return example::run("bilateral", [] {
    const int h = 257, w = 331;  // not multiples of the block
    auto host = synthetic_image(h, w);
    auto img = tl::Tensor::from_host(host, {h, w}), out = tl::Tensor::full({h, w}, NAN);
    const double range_coef = -1.4426950408889634 / (2 * kSigmaRange * kSigmaRange);
    const int block_h = 16, block_w = 32;
    bilateral_kernel[tl::grid(tl::cdiv(h, block_h), tl::cdiv(w, block_w))].options({.num_warps = 8})(
        img, out, h, w, static_cast<int>(img.stride(0)), range_coef, block_h, block_w);

    std::vector<double> in(host.begin(), host.end()), want(in.size());
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        double num = 0, den = 0, c = in[y * w + x];
        for (int dy = -kRadius; dy <= kRadius; ++dy)
          for (int dx = -kRadius; dx <= kRadius; ++dx) {
            int yy = y + dy, xx = x + dx;
            if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
            double nb = in[yy * w + xx], d = nb - c;
            double wt = spatial_weight(dy, dx) * std::exp(-d * d / (2 * kSigmaRange * kSigmaRange));
            num += wt * nb;
            den += wt;
          }
        want[y * w + x] = num / den;
      }
    auto got = out.to_double();
    write_pgm("bilateral_in.pgm", in, h, w);
    write_pgm("bilateral_out.pgm", got, h, w);
    // f32 weights and sums of 49 terms in [0, 1]: a few ulps of 1.
    return example::report("bilateral", example::max_abs_error(got, want), 1e-5);
  });
}
