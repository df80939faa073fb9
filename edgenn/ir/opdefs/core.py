"""The operators edgenn had before the operator contract (inference in ``ir/shapes.py``).

Their attribute sets stay open (``optional=None``): passes attach bookkeeping attributes.
"""

from edgenn.ir.dtypes import DType
from edgenn.ir.schema import F32, I8, I16, I32, define_op

ANY = None
MOVED = (F32, I8, I16, I32)  # data movement copies any of these element types

define_op("Conv2D", "2-D convolution, grouped / depthwise / dilated, explicit pads (NHWC)",
          (F32, I8, I16), optional=ANY,
          tflite=("CONV_2D", "DEPTHWISE_CONV_2D"), onnx=("Conv", "QLinearConv"))
define_op("FullyConnected", "x[N,K] times w[Co,K] transposed, plus bias", (F32, I8, I16),
          optional=ANY, tflite=("FULLY_CONNECTED",), onnx=("Gemm", "MatMul"))
define_op("MatMul", "float matrix product with numpy broadcasting", (F32,), optional=ANY,
          onnx=("MatMul",))
define_op("Add", "element-wise sum with broadcasting and a fused activation",
          (F32, I8, I16),
          optional=ANY, tflite=("ADD",), onnx=("Add", "Sum"))
define_op("Mul", "element-wise product with broadcasting and a fused activation",
          (F32, I8, I16),
          optional=ANY, tflite=("MUL",), onnx=("Mul",))
define_op("Relu", "max(x, 0)", (F32, I8, I16), optional=ANY, tflite=("RELU",), onnx=("Relu",))
define_op("Relu6", "min(max(x, 0), 6)", (F32, I8, I16), optional=ANY, tflite=("RELU6",))
define_op("Clip", "clamp to [min, max]", (F32, I8, I16), optional=ANY,
          tflite=("RELU_N1_TO_1",), onnx=("Clip",))
define_op("MaxPool2D", "2-D max pooling (NHWC)", (F32, I8, I16), required=("kernel",),
          optional=ANY, tflite=("MAX_POOL_2D",), onnx=("MaxPool", "GlobalMaxPool"))
define_op("AvgPool2D", "2-D average pooling (NHWC)", (F32, I8, I16), required=("kernel",),
          optional=ANY, tflite=("AVERAGE_POOL_2D",),
          onnx=("AveragePool", "GlobalAveragePool"))
define_op("Mean", "mean over axes", (F32, I8, I16), required=("axes",), optional=ANY,
          tflite=("MEAN",), onnx=("ReduceMean",))
# why bool too: the layout conversions around comparisons reshape and transpose their results
define_op("Reshape", "same data, another static shape", (*MOVED, DType.BOOL),
          required=("shape",),
          optional=ANY, tflite=("RESHAPE", "SQUEEZE", "EXPAND_DIMS"),
          onnx=("Reshape", "Flatten", "Squeeze", "Unsqueeze"))
define_op("Transpose", "permute dimensions", (*MOVED, DType.BOOL), required=("perm",),
          optional=ANY,
          tflite=("TRANSPOSE",), onnx=("Transpose",))
define_op("Concat", "concatenate along an axis", MOVED, required=("axis",), optional=ANY,
          tflite=("CONCATENATION", "PACK"), onnx=("Concat",))
define_op("Pad", "constant padding", MOVED, required=("pads",), optional=ANY,
          tflite=("PAD", "PADV2"), onnx=("Pad",))
define_op("Softmax", "softmax over the last axis", (F32, I8, I16), optional=ANY,
          tflite=("SOFTMAX",), onnx=("Softmax",))
define_op("BatchNorm", "inference batch normalization over the last axis", (F32,),
          optional=ANY, onnx=("BatchNormalization",))
define_op("Quantize", "float32 -> int8 / int16, or requantization between int8, int16 and "
          "int32", (F32, I8, I16, I32), optional=ANY, tflite=("QUANTIZE",),
          onnx=("QuantizeLinear",))
define_op("Dequantize", "int8 / int16 -> float32", (I8, I16), optional=ANY,
          tflite=("DEQUANTIZE",), onnx=("DequantizeLinear",))
define_op("LRN", "local response normalization across channels", (F32,), optional=ANY,
          tflite=("LOCAL_RESPONSE_NORMALIZATION",), onnx=("LRN",))
define_op("Sigmoid", "logistic function", (F32, I8, I16), optional=ANY, tflite=("LOGISTIC",),
          onnx=("Sigmoid",))
define_op("Tanh", "hyperbolic tangent", (F32, I8, I16), optional=ANY, tflite=("TANH",),
          onnx=("Tanh",))
define_op("FusedConvChain", "consecutive Conv2D layers fused through a rolling row buffer",
          (I8,), optional=ANY)
define_op("SVM", "linear SVM (one-vs-one) that trains on the device", (F32, I8),
          optional=ANY)
