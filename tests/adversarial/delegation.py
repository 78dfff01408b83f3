"""Answers that hand their work to PyTorch: each would earn its activity's points if the grader
let PyTorch reach it, since PyTorch computes the right values. A lab's USES_PYTORCH activities
are the exception; every other activity must score 0 for these, and the rest full marks.

`touches-pytorch` is written in terms of any lab, from its policy: every answer is the reference
with PyTorch imported (by a name built at run time) before it runs. The others are real
delegations in pt03_autodiff, one route each: an import in the answer cell, an import built from
strings, importlib, a reference saved in an earlier cell, sys.modules, an import run through
exec, the notebook's own helper that calls PyTorch, a subprocess, and torch.func.
"""
import ast
import copy

from tests.adversarial.common import Attack, add_cell, answer, reference

TOUCH = '__import__("".join(("to", "rch")))'


def touching(source):
    """`source` with every function it defines starting by importing PyTorch."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            node.body.insert(0, ast.parse(TOUCH).body[0])
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def touches_pytorch(lab, solved):
    notebook = copy.deepcopy(solved)
    for activity in lab.activities:
        answer(notebook, activity, touching(reference(lab, activity)))
    return notebook


def generic(lab):
    from autograder.labs.notebooks import uses_pytorch  # read as text: the suite asks while it is collected

    graded_without = frozenset(lab.activities) - uses_pytorch(lab)
    return [Attack("touches-pytorch", "every answer is the reference, with PyTorch imported when it runs",
                   zero=graded_without, build=lambda lab, s, b, c: touches_pytorch(lab, s))]


# ------------------------------------------------------------------------- pt03_autodiff
VJPS_BY_AUTOGRAD = '''
import numpy as np
import torch


def _by_autograd(forward, a, b, v):
    ta, tb = (torch.tensor(np.asarray(x, dtype=np.float64), requires_grad=True) for x in (a, b))
    out = forward(ta, tb)
    grads = torch.autograd.grad(out, (ta, tb), torch.as_tensor(np.asarray(v, dtype=np.float64)))
    return tuple(g.numpy() for g in grads)


def add_vjp(a, b, v):
    return _by_autograd(torch.add, a, b, v)


def multiply_vjp(a, b, v):
    return _by_autograd(torch.mul, a, b, v)


def matmul_vjp(a, b, v):
    return _by_autograd(torch.matmul, a, b, v)
'''

VJPS_BY_SAVED_AUTOGRAD = '''
import numpy as np


def _via(forward, a, b, v):
    ta, tb = (_tensor(np.asarray(x, dtype=np.float64), requires_grad=True) for x in (a, b))
    grads = _autodiff.grad(forward(ta, tb), (ta, tb), _tensor(np.asarray(v, dtype=np.float64)))
    return tuple(g.numpy() for g in grads)


def add_vjp(a, b, v):
    return _via(lambda x, y: x + y, a, b, v)


def multiply_vjp(a, b, v):
    return _via(lambda x, y: x * y, a, b, v)


def matmul_vjp(a, b, v):
    return _via(lambda x, y: x @ y, a, b, v)
'''

SUM_BY_STRINGS = '''
import numpy as np


def sum_to_shape(v, shape):
    engine = __import__("".join(reversed("hcrot")))
    v = np.asarray(v, dtype=np.float64)
    if len(shape) > v.ndim:
        raise ValueError("the target shape is longer than the adjoint's")
    return engine.from_numpy(v.copy()).sum_to_size(tuple(shape)).numpy().reshape(tuple(shape))
'''

SUM_BY_SYS_MODULES = '''
import sys

import numpy as np


def sum_to_shape(v, shape):
    engine = sys.modules["torch"]
    v = np.asarray(v, dtype=np.float64)
    if len(shape) > v.ndim:
        raise ValueError("the target shape is longer than the adjoint's")
    return engine.from_numpy(v.copy()).sum_to_size(tuple(shape)).numpy().reshape(tuple(shape))
'''

NONLINEAR_BY_IMPORTLIB = '''
import importlib

import numpy as np


def _grad(function, x, v):
    engine = importlib.import_module("torch")
    tx = engine.tensor(np.asarray(x, dtype=np.float64), requires_grad=True)
    (g,) = engine.autograd.grad(function(engine, tx), (tx,), engine.as_tensor(np.asarray(v, dtype=np.float64)))
    return g.numpy()


def tanh_vjp(y, v):
    return _grad(lambda engine, t: engine.tanh(t), np.arctanh(np.asarray(y, dtype=np.float64)), v)


def relu_vjp(x, v):
    return _grad(lambda engine, t: engine.relu(t), x, v)
'''

NONLINEAR_BY_EXEC = '''
import numpy as np


def _grad(function, x, v):
    tx = _t.tensor(np.asarray(x, dtype=np.float64), requires_grad=True)
    (g,) = _t.autograd.grad(function(tx), (tx,), _t.as_tensor(np.asarray(v, dtype=np.float64)))
    return g.numpy()


def tanh_vjp(y, v):
    return _grad(_t.tanh, np.arctanh(np.asarray(y, dtype=np.float64)), v)


def relu_vjp(x, v):
    return _grad(_t.relu, x, v)
'''

NONLINEAR_BY_TORCH_FUNC = '''
import numpy as np
from torch import as_tensor as _as_tensor, relu as _relu, tanh as _tanh
from torch.func import vjp as _vjp


def _pullback(function, x, v):
    _, back = _vjp(function, _as_tensor(np.asarray(x, dtype=np.float64)))
    return back(_as_tensor(np.asarray(v, dtype=np.float64)))[0].numpy()


def tanh_vjp(y, v):
    return _pullback(_tanh, np.arctanh(np.asarray(y, dtype=np.float64)), v)


def relu_vjp(x, v):
    return _pullback(_relu, x, v)
'''

STEP_BY_GIVEN_HELPER = '''
def classifier_step(X, targets, W, b, lr):
    return torch_reference(X, targets, W, b, lr)
'''

STEP_BY_SUBPROCESS = '''
import os
import subprocess
import sys
import tempfile

import numpy as np

_PROGRAM = """
import sys
import numpy as np
import torch
import torch.nn.functional as F
data = np.load(sys.argv[1])
W = torch.tensor(data["W"], requires_grad=True)
b = torch.tensor(data["b"], requires_grad=True)
logits = torch.tensor(data["X"]) @ W.T + b
loss = F.cross_entropy(logits, torch.as_tensor(data["targets"], dtype=torch.long))
dW, db = torch.autograd.grad(loss, (W, b))
np.savez(sys.argv[2], logits=logits.detach().numpy(), loss=loss.item(), dW=dW.numpy(), db=db.numpy())
"""


def classifier_step(X, targets, W, b, lr):
    with tempfile.TemporaryDirectory() as folder:
        given, found = os.path.join(folder, "in.npz"), os.path.join(folder, "out.npz")
        np.savez(given, X=np.asarray(X, dtype=np.float64), targets=np.asarray(targets),
                 W=np.asarray(W, dtype=np.float64), b=np.asarray(b, dtype=np.float64))
        subprocess.run([sys.executable, "-c", _PROGRAM, given, found], check=True)
        out = np.load(found)
        dW, db = out["dW"], out["db"]
        return {"logits": out["logits"], "loss": float(out["loss"]), "dW": dW, "db": db,
                "W": np.asarray(W) - lr * dW, "b": np.asarray(b) - lr * db}
'''

SAVE_AUTOGRAD = "_autodiff, _tensor = torch.autograd, torch.tensor\n"
EXEC_IMPORT = 'exec("import tor" + "ch as _t", globals())\n'


def pt03(lab):
    def replace(activity, source, extra=None, before=None):
        def build(lab, solved, blank, context):
            notebook = answer(copy.deepcopy(solved), activity, source)
            if extra is not None:  # a cell of the student's own, just before the answer
                index = next(i for i, c in enumerate(notebook.cells) if c.id == f"{before}-answer")
                add_cell(notebook, extra, notebook.cells[index - 1].id)
            return notebook
        return build

    return [
        Attack("delegate-import-in-answer", "1a's VJPs by torch.autograd.grad, imported in the answer cell",
               zero=frozenset({"1a"}), build=replace("1a", VJPS_BY_AUTOGRAD)),
        Attack("delegate-saved-reference", "1a's VJPs by torch.autograd saved in an earlier cell of the student's",
               zero=frozenset({"1a"}), build=replace("1a", VJPS_BY_SAVED_AUTOGRAD, SAVE_AUTOGRAD, "1a")),
        Attack("delegate-import-from-strings", "1b's sum_to_shape by Tensor.sum_to_size, the module's name "
               "built at run time", zero=frozenset({"1b"}), build=replace("1b", SUM_BY_STRINGS)),
        Attack("delegate-sys-modules", "1b's sum_to_shape by the torch module found in sys.modules",
               zero=frozenset({"1b"}), build=replace("1b", SUM_BY_SYS_MODULES)),
        Attack("delegate-importlib", "1c's VJPs by torch.autograd.grad through importlib.import_module",
               zero=frozenset({"1c"}), build=replace("1c", NONLINEAR_BY_IMPORTLIB)),
        Attack("delegate-exec-import", "1c's VJPs by a torch imported through exec in an earlier cell",
               zero=frozenset({"1c"}), build=replace("1c", NONLINEAR_BY_EXEC, EXEC_IMPORT, "1c")),
        Attack("delegate-torch-func", "1c's VJPs by torch.func.vjp", zero=frozenset({"1c"}),
               build=replace("1c", NONLINEAR_BY_TORCH_FUNC)),
        Attack("delegate-given-helper", "3's classifier_step returns the notebook's own torch_reference",
               zero=frozenset({"3"}), build=replace("3", STEP_BY_GIVEN_HELPER)),
        Attack("delegate-subprocess", "3's classifier_step computed by PyTorch in a Python subprocess",
               zero=frozenset({"3"}), build=replace("3", STEP_BY_SUBPROCESS)),
    ]


SPECIFIC = {"pt03_autodiff": pt03}


def attacks(lab):
    """The delegation attacks on `lab`: the generic one, then those written for it."""
    return generic(lab) + (SPECIFIC[lab.name](lab) if lab.name in SPECIFIC else [])
