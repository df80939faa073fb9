/* Fast int8 fully connected layer for ARMv7E-M (Cortex-M4/M7 DSP extension).
 *
 * out[c] = requant(bias_folded[c] + sum_k x[k] * w[c][k]) with the input offset pre-folded
 * into the bias (bias - in_zp * sum_k w[c][k]) at generation time. The weights are re-packed
 * by edgenn/backends/cortexm/kernels/fast_fc.py (pack_fc_weights gives the exact order): int16
 * pairs, 4 output rows interleaved per pair, the pair count padded to a multiple of 3.
 */
#ifndef EDGENN_FC_S8_DSP_H
#define EDGENN_FC_S8_DSP_H

#include <stdint.h>

/* depth: K; pairs: padded pair count (multiple of 3, >= ceil(K4 / 2) with K4 = K rounded up
 * to 4); out_c: rows; wpack: ceil(out_c / 4) * pairs * 4 words; bias/mult/shift: padded to a
 * multiple of 4 rows. scratch: 4 * pairs bytes, 4-byte aligned.
 * why not edgenn_fc_s8's argument list: the weights arrive as interleaved int16 pairs at
 * generation time; repacking them at run time would cost the cycles this variant exists to
 * save. */
void edgenn_fc_s8_dsp(const int8_t *in, int8_t *out, void *scratch, const uint32_t *wpack,
                      const int32_t *bias_folded, const int32_t *mult, const int32_t *shift,
                      int32_t batch, int32_t depth, int32_t pairs, int32_t out_c, int32_t out_zp,
                      int32_t act_lo, int32_t act_hi);

#endif
