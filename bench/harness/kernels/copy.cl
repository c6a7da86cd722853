// Memory-copy ceiling: one read and one write per element, float4 wide.
// kforge-launch: copy4 grid=cdiv(cdiv(numel(x),4),256) block=256 args=x,out,numel(x)
__kernel void copy4(__global const float* x, __global float* out, int n) {
  int q = get_global_id(0);
  int base = q * 4;
  if (base + 3 < n) vstore4(vload4(q, x), q, out);
  else for (int i = base; i < n; ++i) out[i] = x[i];
}
