/* Fast int8 convolution of a 1-input-channel layer (the first layer of image models) for
 * ARMv7E-M: per output row the KHxKW taps of every pixel are gathered once into int16 pairs
 * (padding taps hold the input zero point), then each output channel keeps its packed weight
 * pairs and quantization constants in registers and runs SMLADs along the row.
 *
 * Weights and records are made by edgenn/backends/cortexm/kernels/fast_conv1ch.py:
 * wpack[c][p] = (w[c][2p], w[c][2p+1]) over taps t = ky * kw + kx (x2 when fast), the last
 * pair zero-padded; quant[c] = {bias, mult, shift, half} with the input offset folded into the
 * bias (see edgenn_fixed_point.h edgenn_requant_doubled for the fast modes 1 and 2).
 * scratch: 4 * out_w * ceil(kh * kw / 2) bytes, 4-byte aligned.
 * why not edgenn_conv_s8's argument list: the weights arrive as int16 pairs with {bias, mult,
 * shift, half} records at generation time; repacking them at run time would cost the cycles
 * this variant exists to save. */
#ifndef EDGENN_CONV_S8_1CH_DSP_H
#define EDGENN_CONV_S8_1CH_DSP_H

#include <stdint.h>

void edgenn_conv_s8_1ch_dsp(const int8_t *in, int8_t *out, void *scratch, const uint32_t *wpack,
                            const int32_t *quant, int32_t in_h, int32_t in_w, int32_t out_h,
                            int32_t out_w, int32_t out_c, int32_t kh, int32_t kw, int32_t stride_h,
                            int32_t stride_w, int32_t pad_t, int32_t pad_l, int32_t in_zp,
                            int32_t out_zp, int32_t act_lo, int32_t act_hi, int32_t fast);

#endif
