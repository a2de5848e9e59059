"""The nncjit module: every function, NumPy and torch arguments, the
argument errors (each by its message), outputs given and allocated, and
calls from several Python threads."""
import os
import threading

import numpy as np
import pytest
import torch

import nncjit

SCALE = """
kernel scale(in x: f32[4, 16], out y: f32[4, 16], s: f32) {
  for (int64_t i = 0ll; i < 4ll; i++) {
    for (int64_t j = 0ll; j < 16ll; j++) {
      y[i, j] = (x[i, j]) * s;
    }
  }
}
"""

# Symbolic sizes, a channels-last output, two outputs and an inout.
TWO = """
kernel two(in x: f32[N, 8], out y: f32[N, 8], out z: i32[N], N: i64) {
  for (int64_t i = 0ll; i < N; i++) {
    z[i] = 0;
    for (int64_t j = 0ll; j < 8ll; j++) {
      y[i, j] = (x[i, j]) + 1.f;
      z[i] = (z[i]) + 1;
    }
  }
}
"""

NHWC = """
kernel relu_cl(in x: f32[1, 3, 2, 2] channels_last,
               out y: f32[1, 3, 2, 2] channels_last) {
  for (int64_t i = 0ll; i < 12ll; i++) {
    y[i] = (x[i])<0.f ? 0.f : (x[i]);
  }
}
"""

INOUT = """
kernel acc(inout a: f64[8], in b: f64[8]) {
  for (int64_t i = 0ll; i < 8ll; i++) {
    a[i] = (a[i]) + (b[i]);
  }
}
"""


BIG = """
kernel big(in x: f32[262144], out y: f32[262144]) {
  for (int64_t i = 0ll; i < 262144ll; i++) {
    y[i] = sigmoid(x[i]);
  }
}"""


def message(excinfo):
    return str(excinfo.value)


@pytest.fixture(scope="module")
def scale():
    return nncjit.compile(SCALE, threads=1)


def test_numpy_output_allocated(scale):
    x = np.arange(64, dtype=np.float32).reshape(4, 16)
    y = scale(x, 3.0)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    np.testing.assert_array_equal(y, x * 3)


def test_numpy_output_given(scale):
    x = np.ones((4, 16), np.float32)
    y = np.zeros((4, 16), np.float32)
    assert scale(x, y, 2.0) is y
    assert (y == 2).all()


def test_keywords(scale):
    x = np.ones((4, 16), np.float32)
    y = np.zeros((4, 16), np.float32)
    scale(x=x, y=y, s=5)
    assert (y == 5).all()
    assert (scale(x, s=4) == 4).all()


def test_torch_zero_copy(scale):
    x = torch.randn(4, 16)
    y = torch.empty(4, 16)
    assert scale(x, y, 0.5) is y
    torch.testing.assert_close(y, x * 0.5)
    out = scale(x, 2.0)
    assert isinstance(out, torch.Tensor)
    torch.testing.assert_close(out, x * 2)
    # A view: the kernel writes the base tensor's memory.
    base = torch.zeros(8, 16)
    scale(x, base[2:6], 1.0)
    torch.testing.assert_close(base[2:6], x)
    assert (base[:2] == 0).all()


def test_torch_requires_grad_input(scale):
    x = torch.ones(4, 16, requires_grad=True)
    torch.testing.assert_close(scale(x, 2.0), torch.full((4, 16), 2.0))


def test_symbolic_sizes_and_two_outputs():
    f = nncjit.compile(TWO)
    x = np.random.rand(5, 8).astype(np.float32)
    y, z = f(x, 5)
    np.testing.assert_allclose(y, x + 1)
    assert z.dtype == np.int32 and (z == 8).all()
    assert f.params == [("x", "in", "f32", (5 if False else "N", 8)),
                        ("y", "out", "f32", ("N", 8)),
                        ("z", "out", "i32", ("N",)),
                        ("N", "scalar", "i64", None)]
    # A parsed kernel has the same, without compiling it.
    [name] = nncjit.parse(TWO).kernels
    assert nncjit.parse(TWO).kernel(name).params == f.params


def test_allocated_torch_outputs_have_the_kernels_dtypes():
    f = nncjit.compile(TWO)
    y, z = f(torch.rand(5, 8), 5)
    assert y.dtype == torch.float32 and z.dtype == torch.int32
    assert (z == 8).all()


def test_channels_last_output():
    f = nncjit.compile(NHWC)
    x = torch.randn(1, 3, 2, 2).contiguous(memory_format=torch.channels_last)
    y = f(x)
    assert y.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(y, x.relu())
    # NumPy: the output has the declared strides too.
    yn = f(x.numpy() if False else np.ascontiguousarray(
        x.permute(0, 2, 3, 1).numpy()).transpose(0, 3, 1, 2))
    assert yn.strides == (48, 4, 24, 12)
    np.testing.assert_allclose(yn, x.relu().numpy())


def test_padded_output_strides():
    f = nncjit.compile("""
kernel pad(in x: f32[3, 4], out y: f32[3, 4] strides [8ll, 1ll]) {
  for (int64_t i = 0ll; i < 3ll; i++) {
    for (int64_t j = 0ll; j < 4ll; j++) {
      y[i, j] = (x[i, j]) + 1.f;
    }
  }
}""")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = f(x)
    assert y.strides == (32, 4)
    np.testing.assert_array_equal(y, x + 1)
    t = f(torch.from_numpy(x))
    assert t.stride() == (8, 1)
    torch.testing.assert_close(t, torch.from_numpy(x) + 1)


def test_inout_has_nothing_to_return():
    f = nncjit.compile(INOUT)
    a, b = np.ones(8), np.arange(8.0)
    assert f(a, b) is None
    np.testing.assert_array_equal(a, 1 + np.arange(8.0))


def test_parse_print_lower_remarks_llvm_ir(tmp_path):
    m = nncjit.parse(SCALE)
    assert isinstance(m, nncjit.Module) and m.kernels == ["scale"]
    k = m.kernel("scale")
    assert k.name == "scale"
    assert "kernel scale(\n    in x: f32[4, 16],\n    out y: f32[4, 16],\n    s: f32) {" \
        in nncjit.print(k)
    assert nncjit.print(m) == str(m)
    path = tmp_path / "scale.nnc"
    path.write_text(SCALE)
    assert nncjit.parse(path).kernels == ["scale"]
    assert nncjit.parse(str(path)).kernels == ["scale"]
    lowered = str(nncjit.lower(BIG, threads=2))
    assert "task big_" in lowered and "nnc_parallel_for" in lowered
    assert "/* parallel */" in str(nncjit.lower(BIG, upto="parallelize", threads=2))
    assert str(nncjit.lower(path, upto="reductions")) == nncjit.print(k)
    assert "loop 'i' parallelized" in nncjit.remarks(BIG, threads=2)
    ir = nncjit.llvm_ir(SCALE, threads=1)
    assert "define noundef i32 @nnc_kernel_entry(ptr" in ir
    assert "define" in nncjit.llvm_ir(SCALE, optimized=False)
    f = nncjit.compile(k, threads=1)
    assert f.name == "scale" and "kernel scale" in nncjit.print(f)
    assert nncjit.compile(m, kernel="scale").name == "scale"
    assert nncjit.compile(SCALE, kernel=None).name == "scale"


def test_options():
    x = np.ones((4, 16), np.float32)
    for opts in [dict(opt_level=0), dict(parallel="none"), dict(parallel="outputs"),
                 dict(bounds="all"), dict(streaming="always"), dict(fp_contract=False),
                 dict(reassociate=False), dict(vector_math="libm"), dict(grain=1),
                 dict(reciprocal=True), dict(vector_width=256), dict(vector_width=128),
                 dict(winograd=True),
                 dict(features="-avx512f"), dict(passes=["parallelize", "outline-parallel"])]:
        assert (nncjit.compile(SCALE, **opts)(x, 2.0) == 2).all(), opts


NORMALIZE = """
kernel normalize(in d: f32[8], in x: f32[8, 64], out y: f32[8, 64]) {
  for (int64_t i = 0ll; i < 8ll; i++) {
    for (int64_t j = 0ll; j < 64ll; j++) {
      y[i, j] = (x[i, j]) / (d[i]);
    }
  }
}
"""


def test_reciprocal():
    rng = np.random.default_rng(7)
    d = rng.uniform(0.5, 3.0, 8).astype(np.float32)
    x = rng.uniform(-4.0, 4.0, (8, 64)).astype(np.float32)
    # Off (the default), a division; on, a multiplication by the reciprocal,
    # rounded as numpy rounds it.
    assert (nncjit.compile(NORMALIZE)(d, x) == x / d[:, None]).all()
    fast = nncjit.compile(NORMALIZE, reciprocal=True)(d, x)
    assert (fast == x * (np.float32(1) / d)[:, None]).all()
    assert (fast != x / d[:, None]).any()
    assert ("division by 'd[i]' computed as a multiplication by its "
            "reciprocal, invariant in loop 'j'") in nncjit.remarks(NORMALIZE, reciprocal=True)
    assert "but --reciprocal=off" in nncjit.remarks(NORMALIZE)


def test_option_errors():
    # The keywords, their checks and their messages come from the table of
    # options (include/nnc/Support/Options.def), as the tool's flags do.
    with pytest.raises(nncjit.Error) as e:
        nncjit.compile(SCALE, parallel="some")
    assert message(e) == "parallel expects all, outputs or none, got 'some'"
    with pytest.raises(nncjit.Error) as e:
        nncjit.compile(SCALE, thread=2)
    assert message(e) == (
        "unknown compile option 'thread'; the options are: opt_level, cpu, "
        "features, fp_contract, reassociate, reciprocal, vector_math, "
        "vector_width, bounds, cache_dir, threads, parallel, grain, "
        "trust_parallel, streaming, streaming_threshold, winograd, conv, passes")
    with pytest.raises(nncjit.Error) as e:
        nncjit.compile(SCALE, opt_level=4)
    assert message(e) == "opt_level expects 0 to 3, got '4'"
    with pytest.raises(nncjit.Error) as e:
        nncjit.compile(SCALE, threads=-1)
    assert message(e) == "threads expects 0 to 1024, got '-1'"
    with pytest.raises(nncjit.Error) as e:
        nncjit.compile(SCALE, vector_width=384)
    assert message(e) == "vector_width expects 0, 128, 256 or 512, got '384'"
    with pytest.raises(nncjit.Error) as e:
        nncjit.compile(SCALE, reassociate="yes")
    assert message(e) == "reassociate expects a bool, not str"
    with pytest.raises(nncjit.Error) as e:
        nncjit.compile(SCALE, fp_contract=1)
    assert message(e) == "fp_contract expects a bool or None, not int"
    with pytest.raises(nncjit.Error) as e:
        nncjit.compile(SCALE, grain=True)
    assert message(e) == "grain expects an int, not bool"
    with pytest.raises(nncjit.Error) as e:
        nncjit.compile(SCALE, bounds=1)
    assert message(e) == "bounds expects a str, not int"
    with pytest.raises(nncjit.Error) as e:
        nncjit.compile(SCALE, passes=["parallelise"])
    assert "parallelise" in message(e) and "parallelize" in message(e)
    # Every keyword takes a valid value; None is the default.
    x = np.ones((4, 16), np.float32)
    kernel = nncjit.compile(
        SCALE, opt_level=2, cpu=None, features="", fp_contract=None,
        reassociate=False, reciprocal=True, vector_math="libm", vector_width=0,
        bounds="all", threads=2, parallel="outputs", grain=1,
        trust_parallel=False, streaming="off", streaming_threshold=0,
        winograd=False, conv="generated", passes=None)
    assert (kernel(x, 2.0) == 2 * x).all()
    with pytest.raises(nncjit.Error) as e:
        nncjit.compile(SCALE, conv="fast")
    assert message(e) == "conv expects onednn, generated or auto, got 'fast'"


CONV_3X3 = """
kernel conv(in x: f32[2, 32, 15, 15] channels_last, in w: f32[48, 32, 3, 3], in b: f32[48],
    out y: f32[2, 48, 15, 15] channels_last) {
  y = nnc_aten_conv2d(buf_args={x, w, b}, args={1ll, 1ll, 1ll, 1ll, 1ll, 1ll, 1ll}, post_ops={relu})
}
"""


def test_convolutions_generated_or_timed_give_onednns_result():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 15, 15, 32), np.float32).transpose(0, 3, 1, 2)
    w = rng.standard_normal((48, 32, 3, 3), np.float32)
    b = rng.standard_normal(48, np.float32)
    want = nncjit.compile(CONV_3X3)(x, w, b)
    for conv in ("generated", "auto"):
        got = nncjit.compile(CONV_3X3, conv=conv)(x, w, b)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    assert "convolution generated: blocks of" in nncjit.remarks(
        CONV_3X3, conv="generated", vector_width=256)


def test_more_argument_errors(scale):
    x = np.ones((4, 16), np.float32)
    with pytest.raises(nncjit.Error) as e:
        nncjit.compile(SCALE, grain=0)
    assert message(e) == "grain expects a positive number, got '0'"
    with pytest.raises(nncjit.Error) as e:
        scale(np.ones((4, 16), np.complex64), 1.0)
    assert message(e) == ("argument 0 ('x') of kernel 'scale': element type f32 is "
                          "expected, not the buffer format 'Zf'")
    with pytest.raises(nncjit.Error) as e:
        scale(x, np.zeros((4, 16), np.float32), 2 ** 70)
    assert message(e) == ("argument 2 ('s') of kernel 'scale': the integer does not "
                          "fit in 64 bits")
    # NumPy scalars are numbers.
    assert (scale(x, np.float32(3.0)) == 3).all()
    bf = nncjit.compile("""
kernel half(in x: f32[4], out y: bf16[4]) {
  for (int64_t i = 0ll; i < 4ll; i++) {
    y[i] = bf16(x[i]);
  }
}""")
    with pytest.raises(nncjit.Error) as e:
        bf(np.ones(4, np.float32))
    assert message(e) == "a bf16 output cannot be a NumPy array; pass a torch tensor"
    y = bf(torch.ones(4))
    assert y.dtype == torch.bfloat16 and (y == 1).all()


def test_strides_that_are_not_whole_elements():
    f = nncjit.compile("""
kernel c(in x: i16[4], out y: i16[4]) {
  for (int64_t i = 0ll; i < 4ll; i++) {
    y[i] = x[i];
  }
}""")
    base = np.zeros(16, np.uint8)
    odd = np.lib.stride_tricks.as_strided(base.view(np.int16), (4,), (3,))
    with pytest.raises(nncjit.Error) as e:
        f(odd)
    assert message(e) == ("argument 0 ('x') of kernel 'c': its stride of 3 bytes "
                          "is not a whole number of elements")


def test_outputs_keep_the_strides_of_size_one_dims():
    # A [1, C, 1, 1] output declared channels-last has PyTorch's
    # channels-last strides, (C, 1, C, C), not the contiguous ones: graphs'
    # type checks compare them exactly.
    for decl, want in [("channels_last", (8, 1, 8, 8)), ("", (8, 1, 1, 1)),
                       ("strides [8ll, 1ll, 8ll, 8ll]", (8, 1, 8, 8))]:
        k = nncjit.compile("""kernel k(in x: f32[1, 8, 1, 1], out y: f32[1, 8, 1, 1] %s) {
  for (int64_t i = 0ll; i < 8ll; i++) {
    y[0ll, i, 0ll, 0ll] = x[0ll, i, 0ll, 0ll];
  }
}""" % decl)
        x = torch.randn(1, 8, 1, 1)
        y = k(x)
        assert y.stride() == want, decl
        torch.testing.assert_close(y, x)


CONV = """
kernel conv(in x: f32[1, 16, 8, 8], in w: f32[16, 16, 3, 3],
            out y: f32[1, 16, 8, 8]) {
  y = nnc_aten_conv2d(buf_args={x, w}, args={1ll, 1ll, 1ll, 1ll, 1ll, 1ll, 1ll});
}
"""


def test_cache_budget_bounds_weights_in_new_buffers():
    # Weights in a new array at every call (all kept alive): each call makes
    # an entry, and past the budget the least recently used go.
    f = nncjit.compile(CONV, threads=1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 16, 8, 8), dtype=np.float32)
    ws = [rng.standard_normal((16, 16, 3, 3), dtype=np.float32) for _ in range(8)]
    old = nncjit.cache_budget()
    before = nncjit.cache_stats()
    assert set(before) == {"hits", "misses", "replaced", "entries", "bytes",
                           "evicted"}
    y0 = f(x, ws[0])
    entry = nncjit.cache_stats()["bytes"] - before["bytes"]
    assert entry >= ws[0].nbytes
    try:
        # Other tests' entries go first (older), then the first weights'.
        nncjit.set_cache_budget(2 * entry)
        assert nncjit.cache_budget() == 2 * entry
        for w in ws[1:]:
            want = torch.nn.functional.conv2d(torch.from_numpy(x),
                                              torch.from_numpy(w), padding=1)
            np.testing.assert_allclose(f(x, w), want.numpy(), rtol=1e-4,
                                       atol=1e-4)
        after = nncjit.cache_stats()
        assert after["misses"] == before["misses"] + 8
        assert after["evicted"] >= before["evicted"] + 6
        assert after["bytes"] == 2 * entry
        # The first weights' entry went; a call makes it again, the same.
        np.testing.assert_array_equal(f(x, ws[0]), y0)
        assert nncjit.cache_stats()["misses"] == after["misses"] + 1
    finally:
        nncjit.set_cache_budget(old)


def test_an_unsafe_cache_directory_is_said_not_used(tmp_path):
    # Issue 62: a cache directory others can write is refused, and compile()
    # says so as nnc-jit does, instead of compiling without it silently.
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    text = "kernel k(out y: f32[4]) {\n  y[0ll] = 2.f;\n}\n"
    with pytest.warns(UserWarning, match=r"nncjit: not using cache directory "
                      r"'.*shared': others can write to it"):
        k = nncjit.compile(text, cache_dir=str(shared), grain=4097)
    y = np.zeros(4, np.float32)
    k(y)
    assert y[0] == 2
