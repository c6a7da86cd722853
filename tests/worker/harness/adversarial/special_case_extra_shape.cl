// Attack 7: honest only for the main and the published extra shape (64x100, 33x7);
// anything else gets zeros.
// kforge-launch: k grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)
__kernel void k(__global const float* x, __global const float* y, __global float* out, int n) {
  int i = get_global_id(0);
  if (n != 6400 && n != 231) { if (i < n) out[i] = 0.0f; return; }
  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i]; }
}
