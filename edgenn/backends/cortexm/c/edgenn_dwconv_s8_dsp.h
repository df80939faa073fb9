/* Fast int8 depthwise convolution (depth multiplier 1) for ARMv7E-M (Cortex-M4/M7 DSP).
 *
 * NHWC keeps 4 adjacent channels in one word: SXTB16 splits it into the int16 pairs
 * (c, c+2) and (c+1, c+3), and SMLABB/SMLATT multiply each half by its channel's weight
 * (packed at generation time as the same pairs), so one tap of 4 channels is one word
 * load, two SXTB16, two weight words and four single-cycle multiplies.
 *
 * Arrays made by edgenn/backends/cortexm/kernels/fast_dwconv.py:
 * wpack[g][t][0] = (w[4g][t], w[4g+2][t]), wpack[g][t][1] = (w[4g+1][t], w[4g+3][t]) for
 * channel group g (channels zero-padded to a multiple of 4) and tap t = ky * kw + kx;
 * quant[c] = {bias, mult, shift, half} with the input offset folded into the bias
 * (bias - in_zp * sum(w[c])): raw int8 inputs are multiplied and padding taps hold in_zp,
 * whose products cancel the folded term exactly.
 * fast = 0: exact TFLite double rounding (shift = TFLite shift);
 * fast = 1/2: weights and bias doubled, single-SMMULR requantization, proven exact by the
 * generator (kernels/fast_common.py fast_requant_mode); 2 when act_lo == -128 too.
 * Windows wholly inside the input run straight from it; a border window is first copied into
 * scratch (kh * kw * ch bytes) with its padding taps set to in_zp, then runs the same code.
 * why not edgenn_dwconv_s8's argument list: the weights arrive as SXTB16-ordered pairs with
 * records at generation time; repacking them at run time would cost the cycles this variant
 * exists to save. */
#ifndef EDGENN_DWCONV_S8_DSP_H
#define EDGENN_DWCONV_S8_DSP_H

#include <stdint.h>

void edgenn_dwconv_s8_dsp(const int8_t *in, int8_t *out, int8_t *scratch, const uint32_t *wpack,
                          const int32_t *quant, int32_t in_h, int32_t in_w, int32_t ch,
                          int32_t out_h, int32_t out_w, int32_t kh, int32_t kw, int32_t stride_h,
                          int32_t stride_w, int32_t pad_t, int32_t pad_l, int32_t in_zp,
                          int32_t out_zp, int32_t act_lo, int32_t act_hi, int32_t fast);

#endif
