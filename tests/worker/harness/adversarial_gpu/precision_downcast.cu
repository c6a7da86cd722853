// kforge-launch: k grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)
// Rounds its result to bfloat16 (8 mantissa bits): outside the op's 1e-4 tolerance.
extern "C" __global__ void k(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i]; float r = v / (1.0f + expf(-v)) * y[i];
    out[i] = __int_as_float(__float_as_int(r) & 0xFFFF0000); }
}
