// Kernels for pfrt-test-cuda, compiled to PTX for sm_90 at build time.
extern "C" __global__ void scale_add(const float *x, float *y, float a,
                                     long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + y[i];
}

// One block per row; a fixed-order tree in shared memory (deterministic).
extern "C" __global__ void row_sum(const float *x, float *out, long long cols) {
  __shared__ float partial[256];
  const float *row = x + (long long)blockIdx.x * cols;
  float s = 0.0f;
  for (long long j = threadIdx.x; j < cols; j += blockDim.x)
    s += row[j];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = partial[0];
}
