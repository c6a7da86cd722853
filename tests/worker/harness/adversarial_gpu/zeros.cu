// kforge-launch: k grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)
extern "C" __global__ void k(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0.0f;
}
