// Two entry kernels and one device helper, for capguard's image inspection tests.
__device__ __noinline__ float cg_helper_scale(float x, float s) { return x * s + 1.0f; }

extern "C" __global__ void cg_test_axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = cg_helper_scale(x[i], a) + y[i];
}

extern "C" __global__ void cg_test_fill(float *y, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = v;
}
