// The GPU smoke-training test's data generator and CPU reference (share/envkit/smoke).
#include "smoke_model.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace {

namespace model = envkit_smoke;

// Pixels brighter than any noise (noise < 0.3, a bar pixel >= 0.8 - 0.3).
std::vector<std::pair<int, int>> bright_pixels(const float* image) {
  std::vector<std::pair<int, int>> out;
  for (int y = 0; y < model::kImageSize; ++y) {
    for (int x = 0; x < model::kImageSize; ++x) {
      if (image[y * model::kImageSize + x] > 0.4f) out.emplace_back(x, y);
    }
  }
  return out;
}

// The direction (dx, dy) the bright pixels of an image line up along, or (0, 0) if they don't.
std::pair<int, int> bar_direction(const float* image) {
  const auto pixels = bright_pixels(image);
  if (pixels.size() < 2) return {0, 0};
  auto sorted = pixels;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second < b.second : a.first < b.first;
  });
  // Along a horizontal bar consecutive pixels step (1, 0); vertical (0, 1); the diagonals
  // (1, 1) and (-1, 1) once sorted by row.
  const int dx = sorted[1].first - sorted[0].first;
  const int dy = sorted[1].second - sorted[0].second;
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].first - sorted[i - 1].first != dx ||
        sorted[i].second - sorted[i - 1].second != dy) {
      return {0, 0};
    }
  }
  return {dx, dy};
}

// Parameters a few steps into training, so biases are non-zero and logits not all alike.
template <class T>
model::Params<T> partly_trained(const model::Dataset& data) {
  auto p = model::init_params<T>(model::kDefaultSeed);
  model::train_steps<T>(p, data, 20, static_cast<T>(model::kLearningRate));
  return p;
}

}  // namespace

TEST_CASE("data: the same seed gives the same data, another seed other data", "[smoke]") {
  const auto a = model::make_dataset(7);
  const auto b = model::make_dataset(7);
  const auto c = model::make_dataset(8);
  REQUIRE(a.count == model::kTrainSize);
  REQUIRE(a.images.size() == static_cast<std::size_t>(model::kTrainSize) * model::kPixels);
  REQUIRE(a.labels.size() == static_cast<std::size_t>(model::kTrainSize));
  CHECK(a.images == b.images);
  CHECK(a.labels == b.labels);
  CHECK(a.images != c.images);
  // Most pixels differ between seeds, not just a few.
  std::size_t same = 0;
  for (std::size_t i = 0; i < a.images.size(); ++i)
    same += a.images[i] == c.images[i] ? 1 : 0;
  CHECK(same < a.images.size() / 100);

  const auto pa = model::init_params(7);
  const auto pb = model::init_params(7);
  const auto pc = model::init_params(8);
  CHECK(pa.packed() == pb.packed());
  CHECK(pa.conv_w != pc.conv_w);
  CHECK(pa.dense_w != pc.dense_w);
}

TEST_CASE("data: classes are balanced overall and within every minibatch", "[smoke]") {
  const auto data = model::make_dataset(model::kDefaultSeed);
  std::vector<int> total(model::kClasses, 0);
  for (int b = 0; b < model::kBatchesPerEpoch; ++b) {
    std::vector<int> in_batch(model::kClasses, 0);
    const int start = model::batch_start(b);
    for (int i = start; i < start + model::kBatchSize; ++i) {
      const int label = data.labels[static_cast<std::size_t>(i)];
      REQUIRE(label >= 0);
      REQUIRE(label < model::kClasses);
      ++in_batch[static_cast<std::size_t>(label)];
      ++total[static_cast<std::size_t>(label)];
    }
    for (int k = 0; k < model::kClasses; ++k) {
      CHECK(in_batch[static_cast<std::size_t>(k)] == model::kBatchSize / model::kClasses);
    }
  }
  for (int k = 0; k < model::kClasses; ++k) {
    CHECK(total[static_cast<std::size_t>(k)] == model::kTrainSize / model::kClasses);
  }
}

TEST_CASE("data: every image holds one bar whose orientation is its label", "[smoke]") {
  const auto data = model::make_dataset(3);
  const std::pair<int, int> expected[model::kClasses] = {{1, 0}, {0, 1}, {1, 1}, {-1, 1}};
  for (int i = 0; i < data.count; ++i) {
    CAPTURE(i);
    const float* image = data.image(i);
    CHECK(bright_pixels(image).size() == 7);
    CHECK(bar_direction(image) == expected[data.labels[static_cast<std::size_t>(i)]]);
    // Background is noise in [-0.3, 0.3), bars at most 1.2 + 0.3.
    CHECK(*std::min_element(image, image + model::kPixels) >= -0.3f);
    CHECK(*std::max_element(image, image + model::kPixels) < 1.5f);
  }
}

TEST_CASE("data: minibatches cycle through the training set in order", "[smoke]") {
  CHECK(model::batch_start(0) == 0);
  CHECK(model::batch_start(1) == model::kBatchSize);
  CHECK(model::batch_start(model::kBatchesPerEpoch - 1) == model::kTrainSize - model::kBatchSize);
  CHECK(model::batch_start(model::kBatchesPerEpoch) == 0);
  CHECK(model::batch_start(model::kBatchesPerEpoch + 2) == 2 * model::kBatchSize);
}

TEST_CASE("reference: packed parameters round-trip in tensor order", "[smoke]") {
  CHECK(model::parameter_count() ==
        static_cast<std::size_t>(model::kChannels * 9 + model::kChannels +
                                 model::kClasses * model::kFeatures + model::kClasses));
  auto p = model::init_params(5);
  p.conv_b[3] = 0.25f;
  p.dense_b[1] = -0.5f;
  const auto packed = p.packed();
  REQUIRE(packed.size() == model::parameter_count());
  CHECK(packed[model::tensor_offset(1) + 3] == 0.25f);
  CHECK(packed[model::tensor_offset(3) + 1] == -0.5f);
  CHECK(packed[model::tensor_offset(2)] == p.dense_w[0]);
  const auto back = model::Params<float>::unpack(packed.data());
  CHECK(back.packed() == packed);
}

TEST_CASE("reference: backward matches finite differences of the forward", "[smoke]") {
  // In double, on a small batch, from partly trained parameters: central differences with
  // h = 1e-5 are accurate to ~1e-10, far below the tolerance, and a ReLU kink within h of a
  // pre-activation is vanishingly unlikely.
  const auto data = model::make_dataset(model::kDefaultSeed);
  const auto p = partly_trained<double>(data);
  constexpr int kSamples = 4;
  const int start = 5;  // not aligned to the class order
  const float* x = data.image(start);
  const int* labels = data.labels.data() + start;

  model::Params<double> grads;
  const double loss = model::forward_backward(p, x, labels, kSamples, grads);
  CHECK(loss == Approx(model::batch_loss(p, x, labels, kSamples)).epsilon(1e-12));

  const double h = 1e-5;
  for (int t = 0; t < model::kTensorCount; ++t) {
    const auto& g = grads.tensor(t);
    const std::size_t size = g.size();
    // Entries spread over the tensor, plus the one with the largest gradient.
    std::vector<std::size_t> entries;
    const std::size_t step = std::max<std::size_t>(1, size / 12);
    for (std::size_t i = 0; i < size; i += step)
      entries.push_back(i);
    entries.push_back(size - 1);
    entries.push_back(static_cast<std::size_t>(
        std::max_element(g.begin(), g.end(),
                         [](double a, double b) { return std::abs(a) < std::abs(b); }) -
        g.begin()));
    double largest = 0.0;
    for (std::size_t i : entries) {
      CAPTURE(model::tensor_name(t), i);
      auto plus = p;
      plus.tensor(t)[i] += h;
      auto minus = p;
      minus.tensor(t)[i] -= h;
      const double numeric = (model::batch_loss(plus, x, labels, kSamples) -
                              model::batch_loss(minus, x, labels, kSamples)) /
                             (2 * h);
      CHECK(std::abs(numeric - g[i]) <= 1e-8 + 1e-5 * std::abs(numeric));
      largest = std::max(largest, std::abs(numeric));
    }
    // The checked gradients are not all (trivially) zero.
    CAPTURE(model::tensor_name(t));
    CHECK(largest > 1e-4);
  }
}

TEST_CASE("reference: float gradients agree with double ones to 1e-5", "[smoke]") {
  const auto data = model::make_dataset(model::kDefaultSeed);
  const auto pd = partly_trained<double>(data);
  const auto pf = pd.cast<float>();
  const auto pd_rounded = pf.cast<double>();  // the float weights exactly, in double
  model::Params<double> gd;
  model::Params<float> gf;
  const double loss_d =
      model::forward_backward(pd_rounded, data.image(0), data.labels.data(), model::kBatchSize, gd);
  const double loss_f =
      model::forward_backward(pf, data.image(0), data.labels.data(), model::kBatchSize, gf);
  CHECK(std::abs(loss_f - loss_d) <= 1e-5 * loss_d);
  for (int t = 0; t < model::kTensorCount; ++t) {
    CAPTURE(model::tensor_name(t));
    CHECK(model::relative_error(gf.tensor(t).data(), gd.tensor(t).data(), gd.tensor(t).size()) <
          1e-5);
  }
}

TEST_CASE("reference: an SGD step moves against the gradient and lowers the loss", "[smoke]") {
  const auto data = model::make_dataset(model::kDefaultSeed);
  auto p = model::init_params(model::kDefaultSeed);
  model::Params<float> grads;
  const double before =
      model::forward_backward(p, data.image(0), data.labels.data(), model::kBatchSize, grads);
  const auto old = p;
  model::sgd_step(p, grads, 0.1f);
  for (int t = 0; t < model::kTensorCount; ++t) {
    for (std::size_t i = 0; i < p.tensor(t).size(); ++i) {
      REQUIRE(p.tensor(t)[i] == old.tensor(t)[i] - 0.1f * grads.tensor(t)[i]);
    }
  }
  CHECK(model::batch_loss(p, data.image(0), data.labels.data(), model::kBatchSize) < before);
}

TEST_CASE("reference: default training halves the loss and reaches 90% accuracy", "[smoke]") {
  for (std::uint64_t seed : {model::kDefaultSeed, std::uint64_t{12345}}) {
    CAPTURE(seed);
    const auto data = model::make_dataset(seed);
    auto p = model::init_params(seed);
    const auto r = model::train(p, data, model::kDefaultSteps, model::kLearningRate);
    // Small initial weights: about chance level, ln 4.
    CHECK(r.loss_first == Approx(std::log(4.0)).margin(0.05));
    CHECK(r.loss_last <= model::kMaxLossRatio * r.loss_first);
    CHECK(r.accuracy >= model::kMinAccuracy);
    CHECK(model::check_training(r).empty());
    // The result is what evaluating the trained weights gives.
    const auto e = model::evaluate(p, data);
    CHECK(e.loss == r.loss_last);
    CHECK(e.accuracy == r.accuracy);
  }
}

TEST_CASE("reference: without learning the checks fail", "[smoke]") {
  const auto data = model::make_dataset(model::kDefaultSeed);
  auto p = model::init_params(model::kDefaultSeed);
  const auto r = model::train(p, data, model::kDefaultSteps, 0.0f);
  CHECK(r.loss_last == r.loss_first);
  CHECK(r.accuracy < model::kMinAccuracy);
  const std::string reason = model::check_training(r);
  CHECK_THAT(reason, Catch::Contains("loss did not halve"));
  CHECK_THAT(reason, Catch::Contains("accuracy"));
}

TEST_CASE("reference: the training checks and their limits", "[smoke]") {
  model::TrainResult r;
  r.loss_first = 1.4;
  r.loss_last = 0.7;
  r.accuracy = 0.9;
  CHECK(model::check_training(r).empty());
  r.loss_last = 0.71;
  CHECK_THAT(model::check_training(r),
             Catch::Equals("loss did not halve: loss_first 1.4, loss_last 0.71 (must be <= 0.7)"));
  r.loss_last = 0.1;
  r.accuracy = 0.875;
  CHECK_THAT(model::check_training(r), Catch::Equals("training accuracy 0.875 is below 0.9"));
  r.loss_last = std::nan("");  // a diverged run fails, it does not slip through comparisons
  r.accuracy = 1.0;
  CHECK_THAT(model::check_training(r), Catch::StartsWith("loss did not halve"));
}

TEST_CASE("reference: relative error is norm-wise", "[smoke]") {
  const std::vector<float> ref = {3.0f, 4.0f};  // norm 5
  const std::vector<double> close = {3.0, 4.5};
  CHECK(model::relative_error(close.data(), ref.data(), 2) == Approx(0.1));
  CHECK(model::relative_error(ref.data(), ref.data(), 2) == 0.0);
  const std::vector<float> zero = {0.0f, 0.0f};
  CHECK(model::relative_error(ref.data(), zero.data(), 2) == Approx(5.0));
}
