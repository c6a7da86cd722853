# Adversarial: imports os (host access) from a candidate.
import os
import torch
import triton


def forward(x, y):
    return x
