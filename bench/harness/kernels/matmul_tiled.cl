// 16x16 tiled matmul through local memory.
// kforge-launch: matmul grid=cdiv(b.size(1),16), cdiv(a.size(0),16) block=16,16 args=a,b,out,a.size(0),b.size(1),a.size(1)
#define TILE 16
__kernel void matmul(__global const float* a, __global const float* b, __global float* c, int M, int N, int K) {
  __local float As[TILE][TILE];
  __local float Bs[TILE][TILE];
  int col = get_global_id(0), row = get_global_id(1);
  int lc = get_local_id(0), lr = get_local_id(1);
  float acc = 0.0f;
  for (int t = 0; t < K; t += TILE) {
    As[lr][lc] = (row < M && t + lc < K) ? a[row * K + t + lc] : 0.0f;
    Bs[lr][lc] = (t + lr < K && col < N) ? b[(t + lr) * N + col] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k) acc += As[lr][k] * Bs[k][lc];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < M && col < N) c[row * N + col] = acc;
}
