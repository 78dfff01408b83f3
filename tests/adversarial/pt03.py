"""Attacks that only make sense for pt03_autodiff.

patch-torch: pt03's check cells judge the VJPs against `torch.autograd.grad` and backward
passes in the kernel; the attack replaces it (and `torch.allclose`) there, with 1c (the `tanh`
and `relu` VJPs) left unsolved, to make those comparisons pass. It names pt03's activities and
the library its notebook checks with; a lab whose notebook does not judge with PyTorch offers
nothing to patch, so the attack is not part of its corpus. (The grader's own PyTorch runs in
its process, for every lab, out of the kernel's reach.)
"""
from tests.adversarial.common import Attack, add_cell, stubbed

LAB = "pt03_autodiff"

FAKE_TORCH = """
import torch
torch.autograd.grad = lambda outputs, inputs, *a, **k: tuple(torch.zeros_like(x) for x in inputs)
torch.allclose = lambda *a, **k: True
"""


def attacks(lab):
    assert lab.name == LAB, f"the {LAB} attacks were asked for {lab.name}"
    return [
        Attack("patch-torch", "1c unsolved; torch.autograd.grad and torch.allclose patched",
               zero=frozenset({"1c"}),
               build=lambda lab, s, b, c: add_cell(stubbed(s, b, "1c"), FAKE_TORCH, "C-answer")),
    ]
