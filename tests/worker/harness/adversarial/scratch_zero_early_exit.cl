// Attack 3: return early when scratch reads 0 (scratch was zero-filled while timed and
// garbage while verified).
// kforge-launch: k grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x),probe
// kforge-scratch: probe float 1
__kernel void k(__global const float* x, __global const float* y, __global float* out, int n, __global float* probe) {
  int i = get_global_id(0);
  if (probe[0] == 0.0f) return;
  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i]; }
}
