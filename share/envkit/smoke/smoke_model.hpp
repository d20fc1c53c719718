// The GPU smoke-training test's model, data and CPU reference.
//
// Header-only, plain C++17 with no CUDA includes: smoke.cu (nvcc, host code) includes it for the
// data, the initial weights, the pass criteria and the reference it checks the GPU against, and the
// unit tests (g++ -std=c++20) include it to check the reference itself.
//
// The network: 16x16 single-channel images -> conv 3x3 (1 -> 8 channels, stride 1, padding 1,
// with bias) -> ReLU -> flatten (NCHW order) -> dense (2048 -> 4, with bias) -> softmax
// cross-entropy, mean over the batch. Plain SGD with a fixed learning rate.
//
// The data: four classes, the orientation of a short bright bar (horizontal, vertical, diagonal,
// anti-diagonal) at a random position, on uniform noise. Everything comes from one seed through
// splitmix64, so the data and the initial weights are the same bit for bit on every machine and
// with every standard library (no <random> distributions, no libm calls while generating).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace envkit_smoke {

constexpr int kImageSize = 16;
constexpr int kPixels = kImageSize * kImageSize;
constexpr int kClasses = 4;
constexpr int kChannels = 8;
constexpr int kKernelSize = 3;
constexpr int kKernelTaps = kKernelSize * kKernelSize;
constexpr int kPadding = 1;  // "same" convolution: the output is kImageSize x kImageSize too
constexpr int kFeatures = kChannels * kPixels;  // dense layer inputs
constexpr int kTrainSize = 512;
constexpr int kBatchSize = 32;
constexpr int kBatchesPerEpoch = kTrainSize / kBatchSize;
constexpr int kDefaultSteps = 200;
constexpr std::uint64_t kDefaultSeed = 1;
constexpr float kLearningRate = 0.2f;

// Pass criteria.
constexpr double kMaxReferenceError = 1e-3;  // norm-wise relative error, GPU vs CPU, first step
constexpr double kMaxLossRatio = 0.5;        // loss_last <= 0.5 * loss_first
constexpr double kMinAccuracy = 0.9;         // final accuracy on the training set

static_assert(kTrainSize % kBatchSize == 0, "minibatches tile the training set");
static_assert(kTrainSize % kClasses == 0, "every class has as many samples");

// splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and the same everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1), 24 random bits: exact in float.
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }

  // Uniform in [lo, hi).
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }

  // Uniform integer in [0, n); the modulo bias is below 2^-50 for the small n used here.
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }

 private:
  std::uint64_t state_;
};

// Streams derived from the one seed, so the data and the weights do not share random numbers.
inline std::uint64_t data_seed(std::uint64_t seed) {
  return seed ^ 0xD1B54A32D192ED03ULL;
}
inline std::uint64_t weight_seed(std::uint64_t seed) {
  return seed ^ 0x8CB92BA72F3D8DD7ULL;
}

struct Dataset {
  int count = 0;
  std::vector<float> images;  // count x kPixels, row-major (NCHW with C = 1)
  std::vector<int> labels;    // count, in [0, kClasses)

  const float* image(int i) const { return images.data() + static_cast<std::size_t>(i) * kPixels; }
};

// Sample i has class i % kClasses, so every minibatch of kBatchSize consecutive samples holds
// every class equally often. A bar of 7 pixels through a random centre at least 3 pixels from the
// border, brightness in [0.8, 1.2), on uniform noise in [-0.3, 0.3).
inline Dataset make_dataset(std::uint64_t seed, int count = kTrainSize) {
  constexpr int kHalfLength = 3;
  static constexpr int kDirections[kClasses][2] = {{1, 0}, {0, 1}, {1, 1}, {1, -1}};  // dx, dy
  Rng rng(data_seed(seed));
  Dataset data;
  data.count = count;
  data.images.assign(static_cast<std::size_t>(count) * kPixels, 0.0f);
  data.labels.assign(static_cast<std::size_t>(count), 0);
  for (int i = 0; i < count; ++i) {
    const int label = i % kClasses;
    data.labels[static_cast<std::size_t>(i)] = label;
    float* pixels = data.images.data() + static_cast<std::size_t>(i) * kPixels;
    for (int p = 0; p < kPixels; ++p)
      pixels[p] = rng.uniform(-0.3f, 0.3f);
    const int span = kImageSize - 2 * kHalfLength;
    const int cx = kHalfLength + rng.below(span);
    const int cy = kHalfLength + rng.below(span);
    const float brightness = rng.uniform(0.8f, 1.2f);
    for (int t = -kHalfLength; t <= kHalfLength; ++t) {
      const int x = cx + t * kDirections[label][0];
      const int y = cy + t * kDirections[label][1];
      pixels[y * kImageSize + x] += brightness;
    }
  }
  return data;
}

// First sample of the minibatch that training step `step` uses: the batches in order, cycling.
inline int batch_start(int step) {
  return (step % kBatchesPerEpoch) * kBatchSize;
}

// The four trainable tensors. Their packed layout (tensor_offset) is the order the GPU program
// keeps them in one buffer: conv weights (C x 1 x 3 x 3, cuDNN's KCRS), conv bias (C), dense
// weights (kClasses x kFeatures, row-major), dense bias (kClasses).
constexpr int kTensorCount = 4;
inline const char* tensor_name(int t) {
  static const char* const kNames[kTensorCount] = {"conv weights", "conv bias", "dense weights",
                                                   "dense bias"};
  return kNames[t];
}
inline std::size_t tensor_size(int t) {
  static constexpr std::size_t kSizes[kTensorCount] = {
      static_cast<std::size_t>(kChannels) * kKernelTaps, static_cast<std::size_t>(kChannels),
      static_cast<std::size_t>(kClasses) * kFeatures, static_cast<std::size_t>(kClasses)};
  return kSizes[t];
}
inline std::size_t tensor_offset(int t) {
  std::size_t offset = 0;
  for (int i = 0; i < t; ++i)
    offset += tensor_size(i);
  return offset;
}
inline std::size_t parameter_count() {
  return tensor_offset(kTensorCount);
}

template <class T>
struct Params {
  std::vector<T> conv_w, conv_b, dense_w, dense_b;

  Params()
      : conv_w(tensor_size(0)),
        conv_b(tensor_size(1)),
        dense_w(tensor_size(2)),
        dense_b(tensor_size(3)) {}

  std::vector<T>& tensor(int t) {
    std::vector<T>* all[kTensorCount] = {&conv_w, &conv_b, &dense_w, &dense_b};
    return *all[t];
  }
  const std::vector<T>& tensor(int t) const {
    const std::vector<T>* all[kTensorCount] = {&conv_w, &conv_b, &dense_w, &dense_b};
    return *all[t];
  }

  std::vector<T> packed() const {
    std::vector<T> out;
    out.reserve(parameter_count());
    for (int t = 0; t < kTensorCount; ++t)
      out.insert(out.end(), tensor(t).begin(), tensor(t).end());
    return out;
  }
  static Params unpack(const T* packed) {
    Params p;
    for (int t = 0; t < kTensorCount; ++t) {
      const T* begin = packed + tensor_offset(t);
      std::copy(begin, begin + tensor_size(t), p.tensor(t).begin());
    }
    return p;
  }
  template <class U>
  Params<U> cast() const {
    Params<U> out;
    for (int t = 0; t < kTensorCount; ++t) {
      for (std::size_t i = 0; i < tensor_size(t); ++i) {
        out.tensor(t)[i] = static_cast<U>(tensor(t)[i]);
      }
    }
    return out;
  }
};

// Uniform (Glorot) weights from the seed, zero biases. Drawn in float, so Params<float> and
// Params<double> start from the same values.
template <class T = float>
Params<T> init_params(std::uint64_t seed) {
  Rng rng(weight_seed(seed));
  Params<T> p;
  const float conv_limit = 1.0f / 3.0f;  // sqrt(6 / (fan_in 9 + fan_out 9 * C)) ~ 0.27, rounded up
  for (T& w : p.conv_w)
    w = static_cast<T>(rng.uniform(-conv_limit, conv_limit));
  const float dense_limit = 0.05f;  // sqrt(6 / (2048 + 4)) ~ 0.054
  for (T& w : p.dense_w)
    w = static_cast<T>(rng.uniform(-dense_limit, dense_limit));
  return p;
}

// The image of sample s with kPadding zeros around it, so the convolution loops need no bounds
// checks: kPaddedSize x kPaddedSize.
constexpr int kPaddedSize = kImageSize + 2 * kPadding;
inline void pad_image(const float* image, double* padded) {
  std::fill(padded, padded + kPaddedSize * kPaddedSize, 0.0);
  for (int y = 0; y < kImageSize; ++y) {
    for (int x = 0; x < kImageSize; ++x) {
      padded[(y + kPadding) * kPaddedSize + x + kPadding] =
          static_cast<double>(image[y * kImageSize + x]);
    }
  }
}

// conv (cross-correlation, as cuDNN's CUDNN_CROSS_CORRELATION) + bias + ReLU.
// x: n x kPixels; act: n x kFeatures (NCHW).
template <class T>
void conv_relu_forward(const Params<T>& p, const float* x, int n, T* act) {
  double padded[kPaddedSize * kPaddedSize];
  for (int s = 0; s < n; ++s) {
    pad_image(x + static_cast<std::size_t>(s) * kPixels, padded);
    for (int c = 0; c < kChannels; ++c) {
      double w[kKernelTaps];
      for (int t = 0; t < kKernelTaps; ++t) {
        w[t] = static_cast<double>(p.conv_w[static_cast<std::size_t>(c * kKernelTaps + t)]);
      }
      const double bias = static_cast<double>(p.conv_b[static_cast<std::size_t>(c)]);
      T* out = act + static_cast<std::size_t>(s) * kFeatures + c * kPixels;
      for (int oy = 0; oy < kImageSize; ++oy) {
        for (int ox = 0; ox < kImageSize; ++ox) {
          double sum = bias;
          for (int ky = 0; ky < kKernelSize; ++ky) {
            const double* row = padded + (oy + ky) * kPaddedSize + ox;
            for (int kx = 0; kx < kKernelSize; ++kx)
              sum += w[ky * kKernelSize + kx] * row[kx];
          }
          out[oy * kImageSize + ox] = sum > 0.0 ? static_cast<T>(sum) : T(0);
        }
      }
    }
  }
}

// logits = act * dense_w^T + dense_b. act: n x kFeatures; logits: n x kClasses.
template <class T>
void dense_forward(const Params<T>& p, const T* act, int n, T* logits) {
  for (int s = 0; s < n; ++s) {
    const T* a = act + static_cast<std::size_t>(s) * kFeatures;
    for (int k = 0; k < kClasses; ++k) {
      const T* w = p.dense_w.data() + static_cast<std::size_t>(k) * kFeatures;
      double sum = 0.0;
      for (int f = 0; f < kFeatures; ++f)
        sum += static_cast<double>(w[f]) * static_cast<double>(a[f]);
      logits[s * kClasses + k] =
          static_cast<T>(sum + static_cast<double>(p.dense_b[static_cast<std::size_t>(k)]));
    }
  }
}

// Softmax cross-entropy of n rows of logits. Returns the mean loss over the rows; where dlogits is
// given, writes the gradient of that mean; where correct is given, adds the number of rows whose
// largest logit is the label's (ties count against).
template <class T>
double softmax_cross_entropy(const T* logits, const int* labels, int n, T* dlogits,
                             int* correct = nullptr) {
  double total = 0.0;
  for (int s = 0; s < n; ++s) {
    const T* row = logits + s * kClasses;
    const int label = labels[s];
    double max_logit = static_cast<double>(row[0]);
    for (int k = 1; k < kClasses; ++k)
      max_logit = std::max(max_logit, static_cast<double>(row[k]));
    double sum = 0.0;
    for (int k = 0; k < kClasses; ++k)
      sum += std::exp(static_cast<double>(row[k]) - max_logit);
    const double log_sum = std::log(sum) + max_logit;
    total += log_sum - static_cast<double>(row[label]);
    if (dlogits != nullptr) {
      for (int k = 0; k < kClasses; ++k) {
        const double prob = std::exp(static_cast<double>(row[k]) - log_sum);
        dlogits[s * kClasses + k] = static_cast<T>((prob - (k == label ? 1.0 : 0.0)) / n);
      }
    }
    if (correct != nullptr) {
      bool best = true;
      for (int k = 0; k < kClasses; ++k) {
        if (k != label && row[k] >= row[label]) best = false;
      }
      if (best) ++*correct;
    }
  }
  return total / n;
}

// Mean loss of the minibatch (x: n x kPixels, labels: n); grads receives the gradient of it with
// respect to every parameter.
template <class T>
double forward_backward(const Params<T>& p, const float* x, const int* labels, int n,
                        Params<T>& grads) {
  const std::size_t features = static_cast<std::size_t>(n) * kFeatures;
  std::vector<T> act(features);
  std::vector<T> logits(static_cast<std::size_t>(n) * kClasses);
  std::vector<T> dlogits(logits.size());
  conv_relu_forward(p, x, n, act.data());
  dense_forward(p, act.data(), n, logits.data());
  const double loss = softmax_cross_entropy(logits.data(), labels, n, dlogits.data());

  // Dense layer: d dense_w = dlogits^T * act, d dense_b = column sums of dlogits.
  std::vector<double> dense_w(static_cast<std::size_t>(kClasses) * kFeatures, 0.0);
  for (int k = 0; k < kClasses; ++k) {
    double bias = 0.0;
    for (int s = 0; s < n; ++s)
      bias += static_cast<double>(dlogits[s * kClasses + k]);
    grads.dense_b[static_cast<std::size_t>(k)] = static_cast<T>(bias);
  }
  for (int s = 0; s < n; ++s) {
    const T* a = act.data() + static_cast<std::size_t>(s) * kFeatures;
    for (int k = 0; k < kClasses; ++k) {
      const double g = static_cast<double>(dlogits[s * kClasses + k]);
      double* dw = dense_w.data() + static_cast<std::size_t>(k) * kFeatures;
      for (int f = 0; f < kFeatures; ++f)
        dw[f] += g * static_cast<double>(a[f]);
    }
  }
  for (std::size_t i = 0; i < dense_w.size(); ++i)
    grads.dense_w[i] = static_cast<T>(dense_w[i]);

  // d act = dlogits * dense_w, through the ReLU (act > 0 exactly where the pre-activation was),
  // kept in double.
  std::vector<double> dz(features, 0.0);
  for (int s = 0; s < n; ++s) {
    const T* a = act.data() + static_cast<std::size_t>(s) * kFeatures;
    double* d = dz.data() + static_cast<std::size_t>(s) * kFeatures;
    for (int k = 0; k < kClasses; ++k) {
      const double g = static_cast<double>(dlogits[s * kClasses + k]);
      const T* w = p.dense_w.data() + static_cast<std::size_t>(k) * kFeatures;
      for (int f = 0; f < kFeatures; ++f)
        d[f] += g * static_cast<double>(w[f]);
    }
    for (int f = 0; f < kFeatures; ++f) {
      if (!(a[f] > T(0))) d[f] = 0.0;
    }
  }

  // Convolution: d conv_w[c][ky][kx] = sum over samples and outputs of dz times the input under
  // that tap; d conv_b[c] = sum of dz.
  double dw[kChannels][kKernelTaps] = {};
  double db[kChannels] = {};
  double padded[kPaddedSize * kPaddedSize];
  for (int s = 0; s < n; ++s) {
    pad_image(x + static_cast<std::size_t>(s) * kPixels, padded);
    for (int c = 0; c < kChannels; ++c) {
      const double* d = dz.data() + static_cast<std::size_t>(s) * kFeatures + c * kPixels;
      for (int ky = 0; ky < kKernelSize; ++ky) {
        for (int kx = 0; kx < kKernelSize; ++kx) {
          double sum = 0.0;
          for (int oy = 0; oy < kImageSize; ++oy) {
            const double* row = padded + (oy + ky) * kPaddedSize + kx;
            const double* drow = d + oy * kImageSize;
            for (int ox = 0; ox < kImageSize; ++ox)
              sum += drow[ox] * row[ox];
          }
          dw[c][ky * kKernelSize + kx] += sum;
        }
      }
      double bias = 0.0;
      for (int i = 0; i < kPixels; ++i)
        bias += d[i];
      db[c] += bias;
    }
  }
  for (int c = 0; c < kChannels; ++c) {
    for (int t = 0; t < kKernelTaps; ++t) {
      grads.conv_w[static_cast<std::size_t>(c * kKernelTaps + t)] = static_cast<T>(dw[c][t]);
    }
    grads.conv_b[static_cast<std::size_t>(c)] = static_cast<T>(db[c]);
  }
  return loss;
}

// Mean loss of a minibatch without the gradients.
template <class T>
double batch_loss(const Params<T>& p, const float* x, const int* labels, int n) {
  std::vector<T> act(static_cast<std::size_t>(n) * kFeatures);
  std::vector<T> logits(static_cast<std::size_t>(n) * kClasses);
  conv_relu_forward(p, x, n, act.data());
  dense_forward(p, act.data(), n, logits.data());
  return softmax_cross_entropy<T>(logits.data(), labels, n, nullptr);
}

template <class T>
void sgd_step(Params<T>& p, const Params<T>& grads, T learning_rate) {
  for (int t = 0; t < kTensorCount; ++t) {
    std::vector<T>& w = p.tensor(t);
    const std::vector<T>& g = grads.tensor(t);
    for (std::size_t i = 0; i < w.size(); ++i)
      w[i] -= learning_rate * g[i];
  }
}

struct Evaluation {
  double loss = 0.0;      // mean cross-entropy over the whole set
  double accuracy = 0.0;  // fraction classified correctly
};

// Accumulates per-minibatch logits into an Evaluation of a whole set; smoke.cu feeds it the
// logits the GPU computed, the CPU reference those of dense_forward.
class EvaluationSum {
 public:
  template <class T>
  void add(const T* logits, const int* labels, int n) {
    total_loss_ += softmax_cross_entropy<T>(logits, labels, n, nullptr, &correct_) * n;
    count_ += n;
  }
  Evaluation result() const {
    Evaluation e;
    if (count_ > 0) {
      e.loss = total_loss_ / count_;
      e.accuracy = static_cast<double>(correct_) / count_;
    }
    return e;
  }

 private:
  double total_loss_ = 0.0;
  int correct_ = 0;
  int count_ = 0;
};

template <class T>
Evaluation evaluate(const Params<T>& p, const Dataset& data) {
  EvaluationSum sum;
  std::vector<T> act(static_cast<std::size_t>(kBatchSize) * kFeatures);
  std::vector<T> logits(static_cast<std::size_t>(kBatchSize) * kClasses);
  for (int start = 0; start < data.count; start += kBatchSize) {
    const int n = std::min(kBatchSize, data.count - start);
    conv_relu_forward(p, data.image(start), n, act.data());
    dense_forward(p, act.data(), n, logits.data());
    sum.add(logits.data(), data.labels.data() + start, n);
  }
  return sum.result();
}

// loss_first / loss_last are the mean loss over the whole training set before the first and
// after the last step; accuracy is measured on the training set after the last step.
struct TrainResult {
  double loss_first = 0.0;
  double loss_last = 0.0;
  double accuracy = 0.0;
};

// Trains p in place for `steps` SGD steps over the minibatches in fixed order (batch_start).
template <class T>
void train_steps(Params<T>& p, const Dataset& data, int steps, T learning_rate) {
  Params<T> grads;
  for (int step = 0; step < steps; ++step) {
    const int start = batch_start(step);
    forward_backward(p, data.image(start), data.labels.data() + start, kBatchSize, grads);
    sgd_step(p, grads, learning_rate);
  }
}

template <class T>
TrainResult train(Params<T>& p, const Dataset& data, int steps, T learning_rate) {
  TrainResult r;
  r.loss_first = evaluate(p, data).loss;
  train_steps(p, data, steps, learning_rate);
  const Evaluation last = evaluate(p, data);
  r.loss_last = last.loss;
  r.accuracy = last.accuracy;
  return r;
}

// ||a - ref||_2 / ||ref||_2 (||a||_2 where ref is all zero).
template <class A, class B>
double relative_error(const A* a, const B* ref, std::size_t n) {
  double diff = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(ref[i]);
    diff += d * d;
    norm += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
  }
  return norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

inline std::string format_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", value);
  return buffer;
}

// Checks (2) and (3): "" when both hold, else what failed, with the numbers.
inline std::string check_training(const TrainResult& r) {
  std::string reason;
  auto add = [&reason](const std::string& what) {
    if (!reason.empty()) reason += "; ";
    reason += what;
  };
  if (!(r.loss_last <= kMaxLossRatio * r.loss_first)) {
    add("loss did not halve: loss_first " + format_number(r.loss_first) + ", loss_last " +
        format_number(r.loss_last) + " (must be <= " + format_number(kMaxLossRatio * r.loss_first) +
        ")");
  }
  if (!(r.accuracy >= kMinAccuracy)) {
    add("training accuracy " + format_number(r.accuracy) + " is below " +
        format_number(kMinAccuracy));
  }
  return reason;
}

// Check (1): the GPU's first-step loss and gradients against the CPU reference's, from the same
// weights `init` and the first minibatch.
struct ReferenceCheck {
  double max_error = 0.0;  // NaN anywhere makes it NaN
  std::string errors;      // "loss 1e-07, conv.weight 2e-07, ..." for the log
  std::string failure;     // "" when max_error <= kMaxReferenceError
};

inline ReferenceCheck check_first_step(double gpu_loss, const Params<float>& gpu_grads,
                                       const Params<float>& init, const Dataset& data) {
  Params<float> cpu_grads;
  const int start = batch_start(0);
  const double cpu_loss =
      forward_backward(init, data.image(start), data.labels.data() + start, kBatchSize, cpu_grads);
  ReferenceCheck check;
  check.max_error = std::abs(gpu_loss - cpu_loss) / std::abs(cpu_loss);
  check.errors = "loss " + format_number(check.max_error);
  std::string worst = "loss";
  for (int t = 0; t < kTensorCount; ++t) {
    const double error =
        relative_error(gpu_grads.tensor(t).data(), cpu_grads.tensor(t).data(), tensor_size(t));
    check.errors += std::string(", ") + tensor_name(t) + " " + format_number(error);
    // A NaN anywhere is the worst error and stays so.
    if (!std::isnan(check.max_error) && !(error <= check.max_error)) {
      check.max_error = error;
      worst = tensor_name(t);
    }
  }
  if (!(check.max_error <= kMaxReferenceError)) {
    check.failure = "GPU differs from the CPU reference in the first step: " + worst +
                    " relative error " + format_number(check.max_error) + " > " +
                    format_number(kMaxReferenceError);
  }
  return check;
}

// The CPU reference trains `steps` steps from the seed's weights; only the steps are timed
// (`seconds`), for the speedup the GPU run reports.
inline TrainResult train_reference(const Dataset& data, std::uint64_t seed, int steps,
                                   double& seconds) {
  auto params = init_params(seed);
  TrainResult result;
  result.loss_first = evaluate(params, data).loss;
  const auto start = std::chrono::steady_clock::now();
  train_steps(params, data, steps, kLearningRate);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Evaluation last = evaluate(params, data);
  result.loss_last = last.loss;
  result.accuracy = last.accuracy;
  return result;
}

}  // namespace envkit_smoke
