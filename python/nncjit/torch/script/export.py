"""export(): the kernels of a model as .nnc files with their data, for
nnc-jit --check and --expect."""

import json
import os
import time
import warnings

import torch as _torch

from ... import _nncjit
from ..common import _Unsupported
from .capture import _example_list, _script
from .module import _build, _default_name


def _time(fn, threads, budget=0.3, runs=(5, 200)):
    saved = _torch.get_num_threads()
    _torch.set_num_threads(threads)
    try:
        fn()
        ts, start = [], time.perf_counter()
        while len(ts) < runs[1] and (len(ts) < runs[0] or
                                     time.perf_counter() - start < budget):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    finally:
        _torch.set_num_threads(saved)
    ts.sort()
    return round(ts[len(ts) // 2] * 1e3, 4)


def export(module, example_inputs, directory, *, name=None,
           remove_mutation=True, time_eager=True):
    """Writes each fusion group as DIR/NAME_gNN.nnc with NAME_gNN.meta.json
    (buffers: role, dtype, sizes, strides; the eager time of the group's
    ops at 1 and 2 threads) and the group's example data as .npy files
    (its inputs, constants, and PyTorch's outputs), so that the nnc-jit
    tool runs them:

        nnc-jit --check DIR/NAME_g01.nnc
        nnc-jit --input tx_17=DIR/NAME_g01.tx_17.npy ... --expect ...

    Returns the paths of the .nnc files; a group that cannot be written is
    reported with a warning and skipped."""
    import numpy as np
    name = name or _default_name(module)
    os.makedirs(directory, exist_ok=True)
    model = _build(_script(module), _example_list(example_inputs), name, remove_mutation, {})
    paths = []
    for g in model.groups:
        try:
            text = g.write()
        except _Unsupported as e:
            warnings.warn("nncjit: group %d is not exported: %s" % (g.index, e))
            continue
        path = os.path.join(directory, g.name + ".nnc")
        with open(path, "w") as f:
            f.write(text)
        params = _nncjit.parse(text).kernel(g.name).params
        inputs, outputs = g.recorded
        data = dict(zip([p[0] for p in params if p[1] == "in" and p[0] not in g.constants],
                        inputs))
        data.update(zip([p[0] for p in params if p[1] == "out"], outputs))
        data.update(g.constants)
        meta = {"name": g.name, "kernel": g.name, "torch_version": _torch.__version__,
                "ops": g.ops, "params": {}, "buffers": {}, "files": {}}
        for pname, role, dtype, _ in params:
            t = data[pname]
            role = "constant" if pname in g.constants else \
                {"in": "input", "out": "output"}[role]
            meta["buffers"][pname] = {"role": role, "dtype": dtype,
                                      "sizes": list(t.shape), "strides": list(t.stride())}
            fname = "%s.%s.npy" % (g.name, pname)
            arr = t.contiguous().numpy() if t.dtype != _torch.bfloat16 else \
                t.float().contiguous().numpy()
            np.save(os.path.join(directory, fname), arr)
            meta["files"][pname] = fname
        if time_eager:
            fn = lambda: g.run_fallback(inputs)  # noqa: E731
            with _torch.no_grad():
                meta["eager_ms_1t"] = _time(fn, 1)
                meta["eager_ms_2t"] = _time(fn, 2)
            meta["eager_method"] = ("median wall time of the group's PyTorch ops "
                                    "(the fusion group's subgraph, unfused)")
        with open(os.path.join(directory, g.name + ".meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        paths.append(path)
    return paths
