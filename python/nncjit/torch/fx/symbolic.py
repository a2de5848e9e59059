"""Symbolic sizes (torch 2): the shapes of a graph's values with some dims of
its inputs left as symbols, so that one kernel serves every size of them
(docs/python.md, "Dynamic shapes").

propagate() runs the graph on fake tensors (PyTorch's FakeTensorProp) whose
chosen dims are symbols of a ShapeEnv of its own: sympy symbols that are
positive integers, one for each dim, never merged by value (no duck
shaping: a batch of 8 and a sequence of 8 stay two sizes). What the ops
require of the sizes merges or fixes them as PyTorch's tracing does: a
broadcast of two symbols makes them one, a view to a fixed size fixes it
(the kernel is then for that size alone, and its checks refuse others).

Each tensor node gets meta["nncjit_shape"] = (sizes, strides), their
entries ints or sympy expressions over the symbols, which opgraph reads in
place of ShapeProp's numbers; a node that computes on sizes (x.size(1),
n // 4) gets meta["nncjit_size"], what it holds. int_text() writes such an expression as .nnc
text (`s0 * 64ll`); the kernels take each symbol as an i64 parameter that
the operator library reads off the input it sizes (TorchKernel's Size
parameters)."""

import sympy as _sympy
import torch as _torch

_SHAPE_KEY, _SIZE_KEY = "nncjit_shape", "nncjit_size"


def propagate(gm, inputs, dynamic):
    """Runs gm on fakes of inputs (tensors, or ints: sizes) and sets each
    node's meta["nncjit_shape"] or meta["nncjit_size"]. dynamic[i] is, for a tensor input,
    the dims that are symbols; for an int input, the (input, dim) whose size
    it is, or None to keep it the number it is. Returns the symbols of the
    dims, by (input, dim)."""
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    from torch._dispatch.python import enable_python_dispatcher

    mode, fakes, symbols = fake_inputs(inputs, dynamic)
    env = mode.shape_env
    # The Python dispatcher: ops whose C++ kernel reads sizes as numbers
    # (constant_pad_nd) run their symbolic decomposition, as under Dynamo.
    with mode, enable_python_dispatcher():
        FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*fakes)
    _check_relations(env)

    def expr(s):
        return int(s) if not isinstance(s, _torch.SymInt) else _canonical(env, s)
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if isinstance(val, _torch.Tensor):
            node.meta[_SHAPE_KEY] = (tuple(expr(s) for s in val.shape),
                                     tuple(expr(s) for s in val.stride()))
        elif isinstance(val, (int, _torch.SymInt)) and not isinstance(val, bool):
            node.meta[_SIZE_KEY] = expr(val)
        elif isinstance(val, float):   # a number made of sizes: (e // h) ** 0.5
            node.meta[_SIZE_KEY] = val
        elif isinstance(val, (tuple, list)) and val and all(
                isinstance(v, (int, _torch.SymInt)) for v in val):
            node.meta[_SIZE_KEY] = tuple(expr(v) for v in val)   # x.size()
    return {k: expr(s) for k, s in symbols.items()}


def fake_inputs(inputs, dynamic):
    """(a FakeTensorMode of a ShapeEnv of its own, fakes of inputs, the
    symbols by (input, dim)): the dims of dynamic (propagate's) are symbols,
    the others the inputs' sizes; an int input whose dynamic entry names a
    dim is that dim's symbol."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import (DimDynamic, ShapeEnv,
                                                       StatelessSymbolicContext)

    env = ShapeEnv(duck_shape=False, specialize_zero_one=False)
    mode = FakeTensorMode(shape_env=env, allow_non_fake_inputs=True)
    fakes, symbols = [], {}
    for i, x in enumerate(inputs):
        if isinstance(x, _torch.Tensor):
            dims = dynamic[i] or ()
            ctx = StatelessSymbolicContext(dynamic_sizes=[
                DimDynamic.DYNAMIC if d in dims else DimDynamic.STATIC
                for d in range(x.dim())])
            fake = mode.from_tensor(x, symbolic_context=ctx)
            fakes.append(fake)
            for d in dims:
                symbols[i, d] = fake.size(d)
        else:
            fakes.append(x)
    for i, x in enumerate(inputs):
        if isinstance(x, int) and dynamic[i]:
            fakes[i] = symbols[dynamic[i]]
    return mode, fakes, symbols


class UncheckedRelation(ValueError):
    """The graph needs a relation among the dynamic sizes that no kernel
    checks at a call."""


def _check_relations(env):
    """Raises UncheckedRelation where the ops required an equation of the
    symbols that did not make one of them another's or a number (a view to
    sizes a trace wrote as numbers, [2, 7, 4, 16] of an [s0, s1, 64] input,
    holds only where s0 * s1 = 14): the kernels check each input's shape
    against the symbols, not such an equation, and would read another
    size's elements as that view's. Inequalities (a size is not 1, which
    PyTorch's views and broadcasts assume of a symbol) decide strides and
    how a view is made, not what the kernels compute."""
    for guard in env.guards:
        e = _sympy.sympify(env.replace(guard.expr))
        if isinstance(e, _sympy.Eq) and e.free_symbols:
            raise UncheckedRelation(
                "the graph holds only where %s, which its kernels cannot check: it was "
                "traced with sizes as numbers (a view to sizes of the example); trace it "
                "with symbolic sizes (torch.compile, torch.export, make_fx(tracing_mode="
                "'symbolic')), or leave these dims static" % e)


def _canonical(env, s):
    """A SymInt as a sympy expression in the symbols that remain (after the
    merges and fixes the graph's ops made), or an int."""
    e = env.replace(s.node.expr)
    e = _sympy.sympify(e)
    return int(e) if e.is_Integer else e


def shape_of(node):
    """(sizes, strides) of a tensor node as propagate() found them, or None."""
    return node.meta.get(_SHAPE_KEY)


def size_of(node):
    """What a node that computes on sizes holds, as propagate() found it: a
    size (an int or an expression), a float made of sizes, or the sizes of
    a tensor (a tuple of them); None for another node."""
    return node.meta.get(_SIZE_KEY)


def is_symbolic(e):
    return isinstance(e, _sympy.Basic) and not e.is_Integer


def free_symbols(shapes):
    """The symbols of shapes (iterables of sizes), sorted by name."""
    out = set()
    for shape in shapes:
        for e in shape:
            if is_symbolic(e):
                out |= e.free_symbols
    return sorted(out, key=lambda s: s.name)


def int_text(e):
    """e (an int or a sympy expression of positive integer symbols) as .nnc
    i64 text; sympy's floor division and remainder are C's for the
    non-negative values sizes have."""
    if isinstance(e, bool):
        raise TypeError("a size is not a bool")
    if isinstance(e, int) or (isinstance(e, _sympy.Basic) and e.is_Integer):
        return "%dll" % int(e)
    if isinstance(e, _sympy.Symbol):
        return e.name
    if isinstance(e, _sympy.Add):
        terms = [int_text(a) for a in _sympy.Add.make_args(e)]
        return "(%s)" % " + ".join(terms)
    if isinstance(e, _sympy.Mul):
        factors = _sympy.Mul.make_args(e)
        return "(%s)" % " * ".join(int_text(a) for a in factors)
    if isinstance(e, _sympy.Pow) and e.exp.is_Integer and int(e.exp) > 0:
        return "(%s)" % " * ".join([int_text(e.base)] * int(e.exp))
    name = type(e).__name__
    if name in ("FloorDiv", "CleanDiv") and len(e.args) == 2:
        return "(%s / %s)" % (int_text(e.args[0]), int_text(e.args[1]))
    if name in ("Mod", "PythonMod") and len(e.args) == 2:
        return "(%s %% %s)" % (int_text(e.args[0]), int_text(e.args[1]))
    raise TypeError("the size %s is not an expression .nnc writes" % e)


def less(a, b):
    """Whether size a < size b for every value of their symbols of at least
    2 (what a symbol's size is, except where a size 1 fixes it); None where
    that is not decided."""
    if not is_symbolic(a) and not is_symbolic(b):
        return int(a) < int(b)
    d = _sympy.sympify(b) - _sympy.sympify(a)
    shifted = d.subs({s: _sympy.Symbol(s.name + "_", nonnegative=True, integer=True) + 2
                      for s in d.free_symbols})
    return _sympy.simplify(shifted).is_positive
