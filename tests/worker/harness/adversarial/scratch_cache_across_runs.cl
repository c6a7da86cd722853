// Attack 3: compute once, leave a flag and the result in scratch, and copy the cached
// result on later (timed) runs.
// kforge-launch: k grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x),cache
// kforge-scratch: cache float numel(x) + 1
__kernel void k(__global const float* x, __global const float* y, __global float* out, int n, __global float* cache) {
  int i = get_global_id(0);
  if (i >= n) return;
  if (cache[n] == 12345.0f) { out[i] = cache[i]; return; }
  float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i];
  cache[i] = out[i];
  if (i == 0) cache[n] = 12345.0f;
}
