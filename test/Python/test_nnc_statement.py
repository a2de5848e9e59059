"""nncjit.parse_nnc_statement and the Kernel's views and edits that the
bridge reads NNC's fusion groups with: statements, buffers_used,
external_calls and replace_external_call, each error by its message."""
import numpy as np
import pytest
import torch

import nncjit

# NNC's statement for a group: a temporary reused through Alias, a
# prepacked convolution on an opaque context, FreeExt, and an output
# written by a loop.
BODY = """
  Allocate(aten_mul); // dtype=float, dims=[16ll]
  for (int64_t i = 0ll; i < 16ll; i++) {
    aten_mul[i] = (tx[i]) * 2.f;
  }
  Alias(aten_add, aten_mul);
  for (int64_t i = 0ll; i < 16ll; i++) {
    aten_add[i] = (aten_mul[i]) + 1.f;
  }
  conv(dtype=float, sizes=[1ll, 4ll, 2ll, 2ll], strides=[16ll, 4ll, 2ll, 1ll]) = nnc_mkldnn_prepacked_conv_run(buf_args={aten_add(dtype=float, sizes=[1ll, 4ll, 2ll, 2ll], strides=[16ll, 4ll, 2ll, 1ll]), const_ctx(dtype=float, sizes=[], strides=[])}, args={})
  for (int64_t i = 0ll; i < 16ll; i++) {
    aten_sub[i] = (aten_add[i]) - 1.f;
  }
  Free(aten_mul);
  FreeExt(bufs={aten_add});
"""


def kernel_text(params):
    return "kernel g(%s) {%s}" % (", ".join(params), BODY)


INPUTS = ["in tx: f32[16]", "in w: f32[4, 4, 1, 1]"]
OUTPUTS = ["out conv: f32[1, 4, 2, 2]", "out aten_sub: f32[16]"]


def test_undeclared_outputs_and_opaque_arguments():
    s = nncjit.parse_nnc_statement(kernel_text(INPUTS))
    assert s.written == ["conv", "aten_sub"]
    assert s.opaque == ["const_ctx"]
    assert [p[0] for p in s.kernel.params] == ["tx", "w"]
    assert s.kernel.buffers_used == ["aten_mul", "tx", "aten_add", "conv",
                                     "const_ctx", "aten_sub"]


def test_alias_and_freeext():
    k = nncjit.parse_nnc_statement(kernel_text(INPUTS)).kernel
    stmts = k.statements
    # The alias is a temporary of its own with its description's sizes,
    # freed last; FreeExt is gone.
    assert stmts[2] == "  Allocate(aten_add); // dtype=float, dims=[1ll, 4ll, 2ll, 2ll]\n"
    assert stmts[-1] == "  Free(aten_add);\n"
    assert not any("FreeExt" in s or "Alias" in s for s in stmts)


def test_edit_makes_a_kernel_that_runs():
    s = nncjit.parse_nnc_statement(kernel_text(INPUTS + OUTPUTS))
    assert s.written == [] and s.opaque == ["const_ctx"]
    [call] = s.kernel.external_calls
    assert call == ("nnc_mkldnn_prepacked_conv_run", "conv",
                    ["aten_add", "const_ctx"], [])
    k = s.kernel.replace_external_call(0, "nnc_aten_conv2d", ["aten_add", "w"],
                                       [1, 1, 0, 0, 1, 1, 1], ["relu"])
    assert k.external_calls == [("nnc_aten_conv2d", "conv", ["aten_add", "w"],
                                 [1, 1, 0, 0, 1, 1, 1])]
    assert "const_ctx" not in k.buffers_used
    assert "post_ops={relu}" in str(k)
    # aten_add keeps its description in the call.
    assert "buf_args={aten_add(dtype=float, sizes=[1ll, 4ll, 2ll, 2ll]" in str(k)
    # The original is unchanged.
    assert s.kernel.external_calls[0][0] == "nnc_mkldnn_prepacked_conv_run"
    x = torch.randn(16)
    w = torch.randn(4, 4, 1, 1)
    conv, sub = nncjit.compile(str(k))(x, w)
    a = (x * 2 + 1).reshape(1, 4, 2, 2)
    torch.testing.assert_close(conv, torch.relu(torch.nn.functional.conv2d(a, w)))
    torch.testing.assert_close(sub, x * 2)


def test_post_ops_with_parameters():
    s = nncjit.parse_nnc_statement(kernel_text(INPUTS + OUTPUTS))
    k = s.kernel.replace_external_call(0, "nnc_aten_conv2d", ["aten_add", "w"],
                                       [1, 1, 0, 0, 1, 1, 1],
                                       [("clamp", 0.0, 6.0), ("add", "aten_mul")])
    assert "post_ops={clamp(0.f, 6.f), add(aten_mul)}" in str(k)


@pytest.mark.parametrize("args,message", [
    (dict(index=1), "kernel 'g' has 1 external call(s); there is no call 1"),
    (dict(index=-1), "kernel 'g' has 1 external call(s); there is no call -1"),
    (dict(buf_args=["nope"]), "kernel 'g' has no buffer 'nope'"),
    (dict(post_ops=["swish"]), "unknown post-op 'swish'"),
    (dict(post_ops=[("clamp", 0.0)]), "post-op 'clamp' takes 2 parameter(s), got 1"),
    (dict(post_ops=[("clamp", 0.0, "6")]), "post-op 'clamp': its parameters are numbers"),
    (dict(post_ops=[("add", "nope")]), "post-op add: the kernel has no buffer 'nope'"),
    (dict(post_ops=[3]), "a post-op is a name or a tuple (name, parameters...)"),
    (dict(post_ops=[()]), "a post-op is a name or a tuple (name, parameters...)"),
])
def test_edit_errors(args, message):
    k = nncjit.parse_nnc_statement(kernel_text(INPUTS + OUTPUTS)).kernel
    call = dict(index=0, function="nnc_aten_conv2d", buf_args=["aten_add", "w"],
                args=[1, 1, 0, 0, 1, 1, 1])
    call.update(args)
    with pytest.raises(nncjit.Error) as e:
        k.replace_external_call(**call)
    assert str(e.value) == message


def test_parse_errors():
    with pytest.raises(nncjit.Error, match=r"<nnc>:1:35: error: Alias\(b, a\): 'a' is "
                                          r"not an allocated temporary"):
        nncjit.parse_nnc_statement("kernel k(in a: f32[4]) { Alias(b, a); }")
    with pytest.raises(nncjit.Error, match="g.nnc:1:34: error: use of undeclared "
                                          "identifier 'x'"):
        nncjit.parse_nnc_statement("kernel k(out y: f32[4]) { y[0] = x[0]; }",
                                   name="g.nnc")


def test_a_complete_statement_is_verified():
    # No undeclared buffers: the kernel is verified as .nnc is.
    with pytest.raises(nncjit.Error, match="cannot store a value of type f32 into "
                                          "'y' of type i32"):
        nncjit.parse_nnc_statement("kernel k(out y: i32[4]) { y[0] = 1.5f; }")
    k = nncjit.parse_nnc_statement(
        "kernel k(in x: f32[4], out y: f32[4]) {\n"
        "  for (int64_t i = 0ll; i < 4ll; i++) {\n    y[i] = x[i] * 3.f;\n  }\n}").kernel
    y = nncjit.compile(k)(np.arange(4, dtype=np.float32))
    assert y.tolist() == [0.0, 3.0, 6.0, 9.0]


def test_rank1_offsets_become_indices():
    """NNC indexes a rank-1 buffer of stride s at s * i, an element offset;
    .nnc reads the one index as the dimension's, so it is divided by s
    (strides 0 and 1, and buffers of other ranks, keep NNC's index), in
    stores, loads and an index that loads from the same buffer; the .nnc
    parser, outside NNC's statement, reads it as written."""
    text = """kernel g(in a: f32[4] strides [3], in c: f32[4], in z: f32[4] strides [0],
                    in m: f32[4, 2] strides [6, 3], in j: i64[4] strides [2],
                    out y: f32[4] strides [2]) {
      for (int64_t i = 0ll; i < 4ll; i++) {
        y[2ll * i] = a[3ll * i] + c[i] + z[0ll] + m[6ll * i + 3ll] + a[3ll * j[2ll * i]];
      }
    }"""
    [stmt] = nncjit.parse_nnc_statement(text).kernel.statements
    assert "y[2ll * i / 2ll] = " in stmt
    assert "a[3ll * i / 3ll] + c[i] + z[0ll] + m[6ll * i + 3ll]" in stmt
    assert "a[3ll * j[2ll * i / 2ll] / 3ll]" in stmt
    plain = "kernel p(in a: f32[4] strides [3], out y: f32[4]) {" \
        " for (int64_t i = 0ll; i < 4ll; i++) { y[i] = a[i]; } }"
    [stmt] = nncjit.parse(plain).kernel("p").statements
    assert "y[i] = a[i];" in stmt
