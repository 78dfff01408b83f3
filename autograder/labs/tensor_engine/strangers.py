"""Plausible wrong answers the catalogue does not hold, which fail the checks its mistakes fail:
for each, the right diagnosis is none. They measure whether a name is earned by what an answer
computes (`python -m autograder fingerprints --lab tensor_engine --measure 99`); the fingerprints
are never built from them. `of` is empty: no catalogued mistake is theirs."""
from autograder.labs.vocabulary import Variant, slips_of


slip = slips_of("tensor_engine")


STRANGERS = [
    # 1a, beside "multiply gives each factor its own value", "matmul leaves out the transposes",
    # "exp's rule multiplies by the input" and "relu lets the gradient through at exactly 0".
    Variant("", "multiply gives the right operand its own value as slope",
            slip("multiply", "b.grad += unbroadcast(out.grad * a.data, b.shape)",
                 "b.grad += unbroadcast(out.grad * b.data, b.shape)")),
    Variant("", "matmul leaves out the transpose of b only",
            slip("matmul", "a.grad += out.grad @ b.data.T", "a.grad += out.grad @ b.data")),
    Variant("", "exp's rule divides by the output", slip("exp", "out.grad * out.data", "out.grad / out.data")),
    Variant("", "log's rule divides by the output instead of the input",
            slip("log", "out.grad / a.data", "out.grad / out.data")),
    Variant("", "relu leaks a hundredth of the gradient below 0",
            slip("relu", "out.grad * (a.data > 0)", "out.grad * np.where(a.data > 0, 1.0, 0.01)")),
    Variant("", "reduce_sum's rule averages the gradient over the summed entries",
            slip("reduce_sum", "a.grad += np.broadcast_to(upstream, a.shape)",
                 "a.grad += np.broadcast_to(upstream, a.shape) * out.data.size / a.data.size")),
    # 1b, beside "cross_entropy's rule forgets to divide by n".
    Variant("", "cross_entropy's rule divides by n twice",
            slip("cross_entropy", "out.grad * slope / n", "out.grad * slope / n / n")),
    Variant("", "cross_entropy's rule subtracts one in every row at each target's column",
            slip("cross_entropy", "slope[rows, y] -= 1.0", "slope[:, y] -= 1.0")),
    Variant("", "cross_entropy's forward pass sums the losses, its rule still divides by n",
            slip("cross_entropy", "-log_probs[rows, y].mean()", "-log_probs[rows, y].sum()")),
    # 2, beside "numerical_grad takes a one-sided difference" and "divides by h instead of 2h".
    Variant("", "numerical_grad takes below minus above", slip("numerical_grad", "(above - below) / (2 * h)",
                                                               "(below - above) / (2 * h)")),
    Variant("", "numerical_grad evaluates below at x itself but still divides by 2h",
            slip("numerical_grad", "array[index] = kept - h", "array[index] = kept")),
    Variant("", "backward runs every node's rule twice",
            slip("backward", "        node._backward()", "        node._backward()\n        node._backward()")),
    # 3, beside "zero_grad clears only the first parameter" and "train_epoch drops the last batch".
    Variant("", "zero_grad clears only the last parameter", slip("zero_grad", """    for p in params:
        p.grad = np.zeros_like(p.data)""", """    params[-1].grad = np.zeros_like(params[-1].data)""")),
    Variant("", "sgd_step steps by the sign of the gradient",
            slip("sgd_step", "p.data -= lr * p.grad", "p.data -= lr * np.sign(p.grad)")),
    Variant("", "train_epoch skips the first batch",
            slip("train_epoch", "range(0, len(order), batch_size)", "range(batch_size, len(order), batch_size)")),
    Variant("", "train_epoch's batches overlap by one row",
            slip("train_epoch", "order[start:start + batch_size]", "order[start:start + batch_size + 1]")),
    # 4, beside "init_mlp scales the weights by sqrt(2 / fan_out)" and "mlp_forward applies relu to the logits".
    Variant("", "init_mlp scales the weights by sqrt(1 / fan_in)",
            slip("init_mlp", "np.sqrt(2.0 / fan_in)", "np.sqrt(1.0 / fan_in)")),
    Variant("", "init_mlp draws small random biases", slip("init_mlp", "Tensor(np.zeros(fan_out))",
                                                           "Tensor(rng.normal(0.0, 0.01, size=fan_out))")),
    Variant("", "mlp_forward applies relu after every layer but the first",
            slip("mlp_forward", "if layer + 2 < len(params):", "if layer > 0:")),
    Variant("", "gradient_check returns the mean error instead of the largest",
            slip("gradient_check", "float(np.max(np.abs(e - g)", "float(np.mean(np.abs(e - g)")),
    # 5, beside "torch_witness compares only the first parameter's gradient".
    Variant("", "torch_witness compares only the last parameter's gradient",
            slip("torch_witness", "zip(model.params, copies))", "zip(model.params[-1:], copies[-1:]))")),
    Variant("", "torch_witness forgets PyTorch's ReLU", slip("torch_witness", "z = torch.relu(z)", "z = z")),
    # A, beside "adam_step leaves out the bias correction".
    Variant("", "adam_step's second moment decays with beta1",
            slip("adam_step", "v[...] = beta2 * v + (1 - beta2) * p.grad ** 2",
                 "v[...] = beta1 * v + (1 - beta1) * p.grad ** 2")),
    Variant("", "adam_step corrects the first moment's bias one step ahead",
            slip("adam_step", 'm / (1 - beta1 ** state["t"])', 'm / (1 - beta1 ** (state["t"] + 1))')),
    # C, beside "dual_multiply keeps only one term", "dual_log multiplies the tangent by the value" and
    # "jacobian_fwd lays each JVP out as a row".
    Variant("", "dual_multiply subtracts the second term",
            slip("dual_multiply", "a.tangent * b.value + a.value * b.tangent",
                 "a.tangent * b.value - a.value * b.tangent")),
    Variant("", "dual_log divides the tangent by the value squared",
            slip("dual_log", "a.tangent / a.value", "a.tangent / a.value ** 2")),
    Variant("", "jacobian_fwd reshapes input shape first, without moving the axes",
            slip("jacobian_fwd", "stacked.reshape(stacked.shape[:-1] + x.shape)",
                 "stacked.reshape(x.shape + stacked.shape[:-1])")),
    # D, beside "newton_step adds the Newton direction".
    Variant("", "newton_step takes half the Newton step",
            slip("newton_step", "return x - np.linalg.solve(", "return x - 0.5 * np.linalg.solve(")),
    Variant("", "vjp_tensor's log rule divides by the output", slip("vjp_tensor", "g * a.reciprocal()",
                                                                    "g * node.reciprocal()")),
    # E, beside "conv2d's bias gradient sums the first example's gradient only" and "keeps the padded border".
    Variant("", "conv2d's bias gradient averages over the batch",
            slip("conv2d", "b.grad += g.sum(axis=(0, 2, 3))", "b.grad += g.sum(axis=(2, 3)).mean(axis=0)")),
    Variant("", "conv2d's x gradient crops the top-left corner of the padded gradient",
            slip("conv2d", "grad_padded[:, :, padding:padding + height, padding:padding + width]",
                 "grad_padded[:, :, :height, :width]")),
    # F, beside "to_dot labels leaves with their empty _op" and "draws the edges of the first two parents".
    Variant("", "to_dot labels leaves 'input'", slip("to_dot", 'node._op or "leaf"', 'node._op or "input"')),
    Variant("", "to_dot draws the edge of the first parent only",
            slip("to_dot", "for parent in node._prev]", "for parent in node._prev[:1]]")),
]
