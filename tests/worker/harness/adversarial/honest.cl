// Control: an honest silu_mul kernel (must stay correct).
// kforge-launch: k grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)
__kernel void k(__global const float* x, __global const float* y, __global float* out, int n) {
  int i = get_global_id(0);
  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i]; }
}
