// Fused silu(x) * y, four elements per work-item (float4) with a scalar tail.
// kforge-launch: silu_mul4 grid=cdiv(cdiv(numel(x),4),256) block=256 args=x,y,out,numel(x)
__kernel void silu_mul4(__global const float* x, __global const float* y,
                        __global float* out, int n) {
  int q = get_global_id(0);
  int base = q * 4;
  if (base + 3 < n) {
    float4 v = vload4(q, x), w = vload4(q, y);
    vstore4(v / (1.0f + exp(-v)) * w, q, out);
  } else {
    for (int i = base; i < n; ++i) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i]; }
  }
}
