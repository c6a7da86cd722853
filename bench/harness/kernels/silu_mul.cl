// Fused silu(x) * y: one read of x and y and one write of out per element.
// kforge-launch: silu_mul grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)
__kernel void silu_mul(__global const float* x, __global const float* y,
                       __global float* out, int n) {
  int i = get_global_id(0);
  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i]; }
}
