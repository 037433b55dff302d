# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 12, 12), "float32"),
            body_conv_weight: R.Tensor((8, 3, 3, 3), "int8"),
            body_conv_weight_scale: R.Tensor((8,), "float32"),
            body_conv_bias: R.Tensor((8,), "int32"),
            body_conv_bias_scale: R.Tensor((8,), "float32"),
            body_fc_weight: R.Tensor((10, 32), "int8"),
            body_fc_weight_scale: R.Tensor((10,), "float32"),
            body_fc_bias: R.Tensor((10,), "int32"),
            body_fc_bias_scale: R.Tensor((10,), "float32")):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            quant = R.quantize(x, R.const(0.062857575714588165, "float32"), R.const(67, "int32"), out_dtype="uint8")
            body_conv_x = R.dequantize(quant, R.const(0.062857575714588165, "float32"), R.const(67, "int32"), out_dtype="float32")
            body_conv_w = R.dequantize(body_conv_weight, body_conv_weight_scale, R.const(0, "int32"), axis=0, out_dtype="float32")
            body_conv_conv = R.nn.conv2d(body_conv_x, body_conv_w, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1)
            body_conv_bias_1 = R.dequantize(body_conv_bias, body_conv_bias_scale, R.const(0, "int32"), axis=0, out_dtype="float32")
            body_conv_bias_nchw = R.reshape(body_conv_bias_1, R.shape([1, 8, 1, 1]))
            body_conv_biased = R.add(body_conv_conv, body_conv_bias_nchw)
            body_conv = R.quantize(body_conv_biased, R.const(0.044757150113582611, "float32"), R.const(67, "int32"), out_dtype="uint8")
            body_relu_x = R.dequantize(body_conv, R.const(0.044757150113582611, "float32"), R.const(67, "int32"), out_dtype="float32")
            body_relu_f = R.nn.relu(body_relu_x)
            body_relu = R.quantize(body_relu_f, R.const(0.044757150113582611, "float32"), R.const(67, "int32"), out_dtype="uint8")
            body_pool_x = R.dequantize(body_relu, R.const(0.044757150113582611, "float32"), R.const(67, "int32"), out_dtype="float32")
            body_pool_f = R.nn.max_pool2d(body_pool_x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], dilation=[1, 1], ceil_mode=False)
            body_pool = R.quantize(body_pool_f, R.const(0.044757150113582611, "float32"), R.const(67, "int32"), out_dtype="uint8")
            body_avg_x = R.dequantize(body_pool, R.const(0.044757150113582611, "float32"), R.const(67, "int32"), out_dtype="float32")
            body_avg_f = R.nn.adaptive_avg_pool2d(body_avg_x, output_size=[2, 2])
            body_avg = R.quantize(body_avg_f, R.const(0.044757150113582611, "float32"), R.const(67, "int32"), out_dtype="uint8")
            body_flatten_x = R.dequantize(body_avg, R.const(0.044757150113582611, "float32"), R.const(67, "int32"), out_dtype="float32")
            body_flatten_f = R.reshape(body_flatten_x, R.shape([2, 32]))
            body_flatten = R.quantize(body_flatten_f, R.const(0.044757150113582611, "float32"), R.const(67, "int32"), out_dtype="uint8")
            body_fc_x = R.dequantize(body_flatten, R.const(0.044757150113582611, "float32"), R.const(67, "int32"), out_dtype="float32")
            body_fc_w = R.dequantize(body_fc_weight, body_fc_weight_scale, R.const(0, "int32"), axis=0, out_dtype="float32")
            body_fc_wt = R.permute_dims(body_fc_w, axes=[1, 0])
            body_fc_matmul = R.matmul(body_fc_x, body_fc_wt)
            body_fc_bias_1 = R.dequantize(body_fc_bias, body_fc_bias_scale, R.const(0, "int32"), axis=0, out_dtype="float32")
            body_fc_biased = R.add(body_fc_matmul, body_fc_bias_1)
            body_fc = R.quantize(body_fc_biased, R.const(0.019239848479628563, "float32"), R.const(53, "int32"), out_dtype="uint8")
            dequant = R.dequantize(body_fc, R.const(0.019239848479628563, "float32"), R.const(53, "int32"), out_dtype="float32")
            R.output(dequant)
        return dequant
