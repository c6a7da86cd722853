# Adversarial (triton): reads a clock to tell timed runs from verified ones.
import time
import torch
import triton


def forward(x, y):
    return x
