# KernelBench-format problem (test fixture): the losses of KernelBench level 1 (Huber as a
# module, KL divergence with batchmean, cross-entropy over class indices, triplet margin as a
# module), which the importer writes as the builtins they are made of.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.huber = nn.SmoothL1Loss(beta=0.5)
        self.triplet = nn.TripletMarginLoss(margin=0.75)

    def forward(self, predictions, targets, labels, negative):
        kl = F.kl_div(torch.log(torch.softmax(predictions, dim=1)), torch.softmax(targets, dim=1), reduction="batchmean")
        return (self.huber(predictions, targets) + kl + F.cross_entropy(predictions, labels)
                + self.triplet(predictions, targets, negative))


batch_size = 64
classes = 32


def get_inputs():
    return [torch.randn(batch_size, classes), torch.randn(batch_size, classes),
            torch.randint(0, classes, (batch_size,)), torch.randn(batch_size, classes)]


def get_init_inputs():
    return []
