"""A model optimized once per shape of its inputs: optimize(max_shapes=N)."""

import torch as _torch

from .. import deploy as _deploy
from ..check import _signature


def call_signature(inputs):
    """What a model optimized for inputs is specialized to: each tensor's
    sizes, strides and dtype, and the other arguments' values (lists and
    tuples item by item)."""
    def one(x):
        if isinstance(x, _torch.Tensor):
            return ("tensor",) + _signature(x)
        if isinstance(x, (list, tuple)):
            return (type(x).__name__,) + tuple(one(i) for i in x)
        try:
            hash(x)
            return ("value", type(x).__name__, x)
        except TypeError:
            return ("repr", repr(x))
    return tuple(one(x) for x in inputs)


class ShapeSpecialized:
    """What optimize returns with max_shapes above 1: called like the
    module, it runs a model optimized for the signature of the call's
    arguments (call_signature: the tensors' sizes, strides and dtypes, the
    other arguments' values), as torch.compile recompiles for new shapes.
    The example's signature is optimized first; a call of a new one
    optimizes the module for it first (the module as it is then, checks
    included: seconds, once), until there are max_shapes. Past that, new
    signatures run the example's model, whose kernels refuse them: PyTorch's
    ops run, counted in nncjit.torch.stats()["refused"], with a warning at
    the first in the process. So do new signatures while
    torch.autograd.profiler records, until a call outside it."""

    def __init__(self, optimize_for, example_inputs, max_shapes):
        self._optimize_for = optimize_for
        self.max_shapes = max_shapes
        self._models = {}
        self._first = self._model_for(example_inputs)

    def _model_for(self, inputs):
        key = call_signature(inputs)
        model = self._models.get(key)
        # Not while the autograd profiler records (optimize cannot): a
        # later call optimizes for the shape.
        if model is None and len(self._models) < self.max_shapes and (
                not self._models or not _torch.autograd._profiler_enabled()):
            model = self._models[key] = self._optimize_for(list(inputs))
        return model

    @property
    def models(self):
        """The models optimized so far, in the order of their first call
        (the example's first)."""
        return list(self._models.values())

    @property
    def report(self):
        """The example's model's report."""
        return self._first.report

    def __call__(self, *inputs):
        return (self._model_for(inputs) or self._first)(*inputs)

    forward = __call__

    def signatures(self):
        """(call signature, model) for each model, in the order of their
        first call (the example's first)."""
        return list(self._models.items())

    def save(self, path):
        """Writes every model as one TorchScript file, which nncjit.torch.load
        and nnc-torch-run load without optimizing again: its forward runs
        the model made for the call's signature, and the example's model
        for others (deploy.save_specialized)."""
        _deploy.save_specialized(self, path)

    def summary(self):
        parts = []
        for key, model in self._models.items():
            shapes = ", ".join(str(list(k[1])) if k[0] == "tensor" else repr(k[-1])
                               for k in key)
            parts.append("inputs %s:\n%s" % (shapes, "\n".join(
                "  " + line for line in model.summary().splitlines())))
        return "\n".join(parts)
