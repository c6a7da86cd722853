// kforge-launch: k grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)
// Never returns: spins on a volatile global load (an input element, never that large), which
// no compiler may remove; a side-effect-free `while (1)` is removed as undefined behaviour.
extern "C" __global__ void k(const float* x, const float* y, float* out, int n) {
  const volatile float* watch = x;
  while (watch[0] < 1e30f) { }
  out[0] = y[0];
}
