/* Portable int8 L2_NORMALIZATION, bit-exact with TFLite Micro's
 * reference_integer_ops::L2Normalization (and edgenn/backends/ref/kernels/l2norm.py). */
#include "edgenn_l2norm_s8.h"

#include "edgenn_fixed_point.h"

/* TFLite GetInvSqrtQuantizedMultiplierExp(input, kReverseShift = -1): 1 / sqrt(input) as a
 * multiplier and a left shift (a gemmlowp Newton-Raphson iteration with 3 integer bits). */
static void edgenn_inv_sqrt(int32_t input, int32_t *mult, int32_t *shift)
{
    if (input <= 1) {
        *mult = EDGENN_INT32_MAX;
        *shift = 0;
        return;
    }
    int32_t s = 11;
    while (input >= (1 << 29)) {
        input /= 4;
        s++;
    }
    const uint32_t pairs = ((uint32_t)edgenn_clz32((uint32_t)input) - 1u) / 2u - 1u;
    s -= (int32_t)pairs;
    input = (int32_t)((uint32_t)input << (2u * pairs)); /* now in [2^27, 2^29) */
    const int32_t half_input = edgenn_rdbpot(input >> 1, 1);
    const int32_t half_three = (1 << 28) + (1 << 27);
    int32_t x = 1 << 28;
    for (int i = 0; i < 5; i++) {
        const int32_t x3 = edgenn_srmpot(edgenn_srdhm(edgenn_srdhm(x, x), x), 6);
        const uint32_t diff = (uint32_t)edgenn_srdhm(half_three, x) -
                              (uint32_t)edgenn_srdhm(half_input, x3);
        x = edgenn_srmpot((int32_t)diff, 3);
    }
    x = edgenn_srdhm(x, 1518500250); /* sqrt(2) / 2 */
    if (s < 0) {
        x = (int32_t)((uint32_t)x << -s);
        s = 0;
    }
    *mult = x;
    *shift = -s;
}

void edgenn_l2norm_s8(const int8_t *in, int8_t *out, int32_t rows, int32_t depth,
                      int32_t in_zp)
{
    for (int32_t r = 0; r < rows; r++) {
        const int8_t *x = in + r * depth;
        int32_t acc = 0;
        for (int32_t c = 0; c < depth; c++) {
            const int32_t v = x[c] - in_zp;
            acc += v * v;
        }
        int32_t mult, shift;
        edgenn_inv_sqrt(acc, &mult, &shift);
        for (int32_t c = 0; c < depth; c++) {
            const int32_t y = edgenn_mbqm(x[c] - in_zp, mult, shift + 7);
            out[r * depth + c] = (int8_t)edgenn_clamp(y, -128, 127);
        }
    }
}
