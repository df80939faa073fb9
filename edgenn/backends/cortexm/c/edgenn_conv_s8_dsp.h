/* Fast int8 convolution for ARMv7E-M (Cortex-M4/M7 DSP extension): SMLAD on int16 pairs.
 *
 * Weights are re-packed at generation time by edgenn/backends/cortexm/kernels/conv_dsp.py
 * (pack_weights there gives the exact order) and the bias is pre-folded with the input
 * offset term, bias - in_zp * sum(w), so the inner loop multiplies raw int8 inputs; padding
 * taps hold the input zero point, whose products cancel against the folded term exactly.
 */
#ifndef EDGENN_CONV_S8_DSP_H
#define EDGENN_CONV_S8_DSP_H

#include <stdint.h>

/* General conv: any kernel size, stride, padding and channel counts; dilation 1, groups 1.
 * quant: per output channel (padded to a multiple of 4) {bias, mult, shift, half}.
 * fast = 0: shift is TFLite's shift, half unused, weights and bias as they are.
 * fast = 1: weights and bias doubled, shift = right shift >= 1,
 *           half = (1 << (shift - 1)) + (out_zp << shift), act_hi == 127 (the generator
 *           proves first that nothing overflows: kernels/conv_dsp.py fast_requant_ok);
 * fast = 2: as 1 and act_lo == -128 (a plain SSAT).
 * scratch: 8 * ceil(kh * kw * in_c / 2) bytes, 4-byte aligned.
 * why not edgenn_conv_s8's argument list: the weights arrive as int16 pairs with {bias, mult,
 * shift, half} records at generation time; repacking them at run time would cost the cycles
 * this variant exists to save. */
void edgenn_conv_s8_dsp(const int8_t *in, int8_t *out, void *scratch, const uint32_t *wpack,
                        const int32_t *quant, int32_t in_h, int32_t in_w, int32_t in_c,
                        int32_t out_h, int32_t out_w, int32_t out_c, int32_t kh, int32_t kw,
                        int32_t stride_h, int32_t stride_w, int32_t pad_t, int32_t pad_l,
                        int32_t in_zp, int32_t out_zp, int32_t act_lo, int32_t act_hi,
                        int32_t fast);

#endif
