"""Decoding of conv packed-params state (versions 2 and 3) and its errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.ao.nn.quantized as nnq

from qnnpy import _core
from qnnpy.convert.torch_weight_reader import conv_state, conv_state_from_tuple, linear_state
from qnnpy.errors import ConversionError


def _conv(**kw) -> nnq.Conv2d:
    torch.manual_seed(0)
    return nnq.Conv2d(4, 8, 3, **kw)


def test_version2_state_of_current_torch_decodes_all_fields():
    m = _conv(stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2)
    state = conv_state(m._packed_params, "conv")
    assert state.version == 2
    c = _core.decode_conv_config(state.version, state.config)
    assert c == {
        "spatial_dims": 2, "stride": [2, 1], "padding": [1, 2], "dilation": [2, 1],
        "output_padding": [0, 0], "groups": 2, "transpose": False,
    }
    np.testing.assert_array_equal(state.weight.data, m.weight().int_repr().numpy())


def test_version3_tuple_decodes_like_version2():
    m = _conv(stride=2, padding=1)
    v2 = m._packed_params.__getstate__()[0]
    config, weight = v2[1]
    v3 = (3, [int(v) for v in config], [None, weight, v2[2][0]])
    a = conv_state_from_tuple(v2, "conv")
    b = conv_state_from_tuple(v3, "conv")
    assert b.version == 3
    assert _core.decode_conv_config(2, a.config) == _core.decode_conv_config(3, b.config)
    np.testing.assert_array_equal(a.weight.data, b.weight.data)
    np.testing.assert_array_equal(a.bias, b.bias)


def test_transpose_flag_is_decoded():
    config = np.array([2, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1], dtype=np.int64)
    assert _core.decode_conv_config(3, config)["transpose"] is True


@pytest.mark.parametrize(
    "version, config, message",
    [
        (4, [2, 1, 1, 0, 0, 1, 1, 0, 0, 1, 0], "unsupported state version"),
        (3, [2, 1, 1, 0, 0, 1, 1, 0, 0, 1], "holds 10 values, expected 11"),
        (3, [5, 1, 1], "spatial dimension count"),
        (3, [2, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0], "stride must be >= 1, got 0"),
        (3, [2, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0], "groups must be >= 1"),
        (3, [2, 1, 1, 0, 0, 1, 1, 0, 0, 1, 6], "unknown flag bits"),
        (2, [2, 1, 1, 0, 0, 1, 1, 1, 0, 1, 0], "output_padding 1 on a non-transposed conv"),
    ],
)
def test_malformed_config_is_rejected(version, config, message):
    with pytest.raises(ValueError, match=message):
        _core.decode_conv_config(version, np.array(config, dtype=np.int64))


def test_malformed_state_tuples_are_rejected():
    m = _conv()
    v2 = m._packed_params.__getstate__()[0]
    with pytest.raises(ConversionError, match="state version '7'"):
        conv_state_from_tuple(("7", v2[1], v2[2]), "blk.conv")
    with pytest.raises(ConversionError, match="blk.conv: version-2 conv config must be a 1-D int16 tensor"):
        conv_state_from_tuple(("2", [v2[1][0].long(), v2[1][1]], v2[2]), "blk.conv")
    with pytest.raises(ConversionError, match="has 2 fields"):
        conv_state_from_tuple(v2[:2], "blk.conv")
    with pytest.raises(ConversionError, match="weight is not a quantized tensor"):
        conv_state_from_tuple(("2", [v2[1][0], torch.zeros(8, 4, 3, 3)], v2[2]), "blk.conv")


def test_linear_state_reads_weight_and_bias():
    torch.manual_seed(0)
    m = nnq.Linear(5, 3)
    m.set_weight_bias(torch.quantize_per_tensor(torch.randn(3, 5), 0.02, 0, torch.qint8), torch.randn(3))
    weight, bias = linear_state(m._packed_params._packed_params, "fc")
    np.testing.assert_array_equal(weight.data, m.weight().int_repr().numpy())
    np.testing.assert_array_equal(bias, m.bias().detach().numpy())
    assert weight.axis == -1
