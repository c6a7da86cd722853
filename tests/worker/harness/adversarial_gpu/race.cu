// kforge-launch: k grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)
// Reads another block's output, which may not be written yet (no grid-wide sync).
extern "C" __global__ void k(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i]; out[i] = v / (1.0f + expf(-v)) * y[i];
  int j = (i + 4 * blockDim.x) % n;
  float w = x[j]; float expect = w / (1.0f + expf(-w)) * y[j];
  out[i] += out[j] - expect;
}
