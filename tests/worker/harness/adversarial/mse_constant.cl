// Attack 8: a degenerate reduction: mse_loss of two N(0,1) tensors is about 2.0, so a
// kernel that writes the constant 2.0 matches the reference on the main shape.
// kforge-launch: k grid=1 block=1 args=out
__kernel void k(__global float* out) { out[0] = 2.0f; }
