// The smoke program's own kernels: bias + ReLU, ReLU backward, softmax cross-entropy, the dense
// bias gradient and SGD. One source for both builds of the program:
//   - smoke.cu includes it and nvcc compiles it (stacks whose NVRTC is older than 11.2);
//   - envkit-smoke hands it to the prefix's NVRTC at run time and launches the kernels through
//     the driver API (every other stack, wheels included: no nvcc, no CUDA headers needed).
// So it includes nothing: NVRTC has no host headers. extern "C" keeps the names unmangled for
// cuModuleGetFunction.

// act (n x channels x pixels, NCHW) = max(act + bias[channel], 0), in place.
extern "C" __global__ void bias_relu_forward(float* act, const float* bias, int channels,
                                             int pixels, int total) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= total) return;
  const float value = act[i] + bias[(i / pixels) % channels];
  act[i] = value > 0.0f ? value : 0.0f;
}

// Through the ReLU: the gradient survives where the activation is positive.
extern "C" __global__ void relu_backward(float* dact, const float* act, int total) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= total) return;
  if (!(act[i] > 0.0f)) dact[i] = 0.0f;
}

// One thread per sample: adds the dense bias to its logits (in place), then writes its
// cross-entropy loss and the gradient of the batch's mean loss with respect to its logits.
extern "C" __global__ void softmax_cross_entropy(float* logits, const float* bias,
                                                 const int* labels, int n, int classes,
                                                 float* loss, float* dlogits) {
  const int s = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (s >= n) return;
  float* row = logits + s * classes;
  float max_logit = -__int_as_float(0x7f800000);  // -infinity, without math.h
  for (int k = 0; k < classes; ++k) {
    row[k] += bias[k];
    max_logit = fmaxf(max_logit, row[k]);
  }
  float sum = 0.0f;
  for (int k = 0; k < classes; ++k)
    sum += expf(row[k] - max_logit);
  const float log_sum = logf(sum) + max_logit;
  const int label = labels[s];
  loss[s] = log_sum - row[label];
  const float inv_n = 1.0f / static_cast<float>(n);
  for (int k = 0; k < classes; ++k) {
    const float prob = expf(row[k] - log_sum);
    dlogits[s * classes + k] = (prob - (k == label ? 1.0f : 0.0f)) * inv_n;
  }
}

// out[k] = sum over rows of m[row][k] (m: rows x cols, row-major): the dense bias gradient.
extern "C" __global__ void column_sums(const float* m, int rows, int cols, float* out) {
  const int k = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= cols) return;
  float sum = 0.0f;
  for (int r = 0; r < rows; ++r)
    sum += m[r * cols + k];
  out[k] = sum;
}

extern "C" __global__ void sgd_update(float* weights, const float* grads, float learning_rate,
                                      int total) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= total) return;
  weights[i] -= learning_rate * grads[i];
}
